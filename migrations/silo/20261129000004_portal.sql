-- The silo portal: users (tenants), groups, access policies and grants, budgets and spend, model
-- routing, and LiteLLM's desired state. Money is numeric, times are timestamptz, names are unique
-- within their scope, and every reference is a foreign key.

-- Silo-wide settings: one row.
CREATE TABLE silo_settings (
    id                   boolean PRIMARY KEY DEFAULT true CONSTRAINT silo_settings_single_row CHECK (id),
    -- IANA name; budget periods start at local midnight here.
    time_zone            text NOT NULL DEFAULT 'UTC' CONSTRAINT silo_settings_time_zone_present CHECK (length(time_zone) BETWEEN 1 AND 64),
    -- The currency LiteLLM reports spend in; limits must use it to be enforceable.
    currency             char(3) NOT NULL DEFAULT 'USD' CONSTRAINT silo_settings_currency_valid CHECK (currency ~ '^[A-Z]{3}$'),
    -- Model access when no grant applies.
    default_model_access text NOT NULL DEFAULT 'allow' CONSTRAINT silo_settings_default_access_valid CHECK (default_model_access IN ('allow', 'deny')),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
INSERT INTO silo_settings DEFAULT VALUES;

CREATE TABLE access_policies (
    name            text PRIMARY KEY CONSTRAINT access_policies_name_valid CHECK (name ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
    description     text NOT NULL DEFAULT '' CONSTRAINT access_policies_description_length CHECK (length(description) <= 500),
    -- matchLabels: {"team": "eng"}.
    tenant_selector jsonb NOT NULL DEFAULT '{}'::jsonb CONSTRAINT access_policies_selector_object CHECK (jsonb_typeof(tenant_selector) = 'object'),
    allowed_domains text[] NOT NULL DEFAULT '{}',
    denied_domains  text[] NOT NULL DEFAULT '{}',
    -- [{"cidr": "10.0.0.0/8", "ports": [443]}].
    egress_rules    jsonb NOT NULL DEFAULT '[]'::jsonb CONSTRAINT access_policies_egress_array CHECK (jsonb_typeof(egress_rules) = 'array'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Users. In Kubernetes mode each is also a Tenant resource (the runtime's source of truth); this
-- row is the portal's. A person has one user record per silo.
CREATE TABLE tenants (
    name          text PRIMARY KEY CONSTRAINT tenants_name_valid CHECK (name ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
    display_name  text NOT NULL CONSTRAINT tenants_display_name_present CHECK (length(btrim(display_name)) BETWEEN 1 AND 120),
    email         text NOT NULL CONSTRAINT tenants_email_valid CHECK (email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
    subject       text NOT NULL CONSTRAINT tenants_subject_present CHECK (length(btrim(subject)) BETWEEN 1 AND 255),
    team          text CONSTRAINT tenants_team_valid CHECK (team ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
    policy_ref    text REFERENCES access_policies (name) ON UPDATE CASCADE ON DELETE RESTRICT,
    cpu           text CONSTRAINT tenants_cpu_valid CHECK (cpu ~ '^[0-9]+(\.[0-9]+)?m?$'),
    memory        text CONSTRAINT tenants_memory_valid CHECK (memory ~ '^[0-9]+(Ki|Mi|Gi|Ti|K|M|G|T)?$'),
    suspended     boolean NOT NULL DEFAULT false,
    -- The Tenant resource's status.phase (Kubernetes mode); null when no runtime reports one.
    phase         text,
    -- How the record came to be: created by an admin, or adopted at a member's first sign-in.
    origin        text NOT NULL DEFAULT 'admin' CONSTRAINT tenants_origin_valid CHECK (origin IN ('admin', 'sign-in', 'resource')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_subject_key UNIQUE (subject)
);
CREATE UNIQUE INDEX tenants_email_key ON tenants (lower(email));
CREATE INDEX tenants_team_idx ON tenants (team);

CREATE TABLE groups (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CONSTRAINT groups_name_valid CHECK (name ~ '^[a-z0-9]([-a-z0-9:._]{0,78}[a-z0-9])?$'),
    scope       text NOT NULL CONSTRAINT groups_scope_valid CHECK (scope IN ('org', 'department', 'team', 'project', 'personal')),
    description text NOT NULL DEFAULT '' CONSTRAINT groups_description_length CHECK (length(description) <= 500),
    -- Groups named in the identity provider's groups claim are mirrored at sign-in.
    source      text NOT NULL DEFAULT 'local' CONSTRAINT groups_source_valid CHECK (source IN ('local', 'idp')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT groups_scope_name_key UNIQUE (scope, name)
);

CREATE TABLE group_members (
    group_id   uuid NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    tenant     text NOT NULL REFERENCES tenants (name) ON UPDATE CASCADE ON DELETE CASCADE,
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, tenant)
);
CREATE INDEX group_members_tenant_idx ON group_members (tenant);

-- Allow or deny one payload to a tenant, a person (subject) or a group. Precedence: higher
-- priority, then deny over allow, then newer (crates/entitlements).
CREATE TABLE grants (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    payload_type text NOT NULL CONSTRAINT grants_payload_type_valid CHECK (payload_type IN ('model', 'mcp-server', 'skill-bundle')),
    payload_id   text NOT NULL CONSTRAINT grants_payload_id_present CHECK (length(btrim(payload_id)) BETWEEN 1 AND 200),
    subject_type text NOT NULL CONSTRAINT grants_subject_type_valid CHECK (subject_type IN ('tenant', 'user', 'group')),
    subject_id   text NOT NULL CONSTRAINT grants_subject_id_present CHECK (length(btrim(subject_id)) BETWEEN 1 AND 255),
    -- Set exactly when the grant is to a group, so that deleting the group removes its grants.
    group_id     uuid REFERENCES groups (id) ON DELETE CASCADE,
    access       text NOT NULL CONSTRAINT grants_access_valid CHECK (access IN ('allow', 'deny')),
    priority     integer NOT NULL DEFAULT 0 CONSTRAINT grants_priority_range CHECK (priority BETWEEN -1000 AND 1000),
    note         text NOT NULL DEFAULT '' CONSTRAINT grants_note_length CHECK (length(note) <= 500),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT grants_group_matches CHECK ((subject_type = 'group') = (group_id IS NOT NULL)
                                           AND (group_id IS NULL OR subject_id = group_id::text))
);
CREATE INDEX grants_payload_idx ON grants (payload_type, payload_id);

-- Spending limits at three levels, each in a calendar period of the silo's time zone.
CREATE TABLE budgets (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    level       text NOT NULL CONSTRAINT budgets_level_valid CHECK (level IN ('silo', 'group', 'user')),
    group_id    uuid REFERENCES groups (id) ON DELETE CASCADE,
    tenant      text REFERENCES tenants (name) ON UPDATE CASCADE ON DELETE CASCADE,
    currency    char(3) NOT NULL CONSTRAINT budgets_currency_valid CHECK (currency ~ '^[A-Z]{3}$'),
    amount      numeric(14, 2) NOT NULL CONSTRAINT budgets_amount_range CHECK (amount >= 0),
    period      text NOT NULL CONSTRAINT budgets_period_valid CHECK (period IN ('day', 'week', 'month')),
    thresholds  smallint[] NOT NULL DEFAULT '{50,80,100}'
                CONSTRAINT budgets_thresholds_valid CHECK (1 <= ALL (thresholds) AND 100 >= ALL (thresholds) AND cardinality(thresholds) <= 10),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT budgets_target_matches CHECK (
        (level = 'silo' AND group_id IS NULL AND tenant IS NULL)
        OR (level = 'group' AND group_id IS NOT NULL AND tenant IS NULL)
        OR (level = 'user' AND tenant IS NOT NULL AND group_id IS NULL))
);
-- One limit per target.
CREATE UNIQUE INDEX budgets_one_silo_key ON budgets (level) WHERE level = 'silo';
CREATE UNIQUE INDEX budgets_group_key ON budgets (group_id) WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX budgets_tenant_key ON budgets (tenant) WHERE tenant IS NOT NULL;

-- Threshold notices: at most one per limit, period and threshold.
CREATE TABLE budget_notices (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    budget_id     uuid NOT NULL REFERENCES budgets (id) ON DELETE CASCADE,
    period_start  timestamptz NOT NULL,
    threshold     smallint NOT NULL CONSTRAINT budget_notices_threshold_range CHECK (threshold BETWEEN 1 AND 100),
    spent         numeric(18, 6) NOT NULL,
    message       text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    dismissed_at  timestamptz,
    CONSTRAINT budget_notices_once_per_period UNIQUE (budget_id, period_start, threshold)
);

-- Spend as LiteLLM logged it, one row per request, ingested by the reconciler.
CREATE TABLE spend_events (
    request_id  text PRIMARY KEY,
    tenant      text REFERENCES tenants (name) ON UPDATE CASCADE ON DELETE SET NULL,
    model       text NOT NULL,
    amount      numeric(18, 6) NOT NULL CONSTRAINT spend_events_amount_range CHECK (amount >= 0),
    occurred_at timestamptz NOT NULL
);
CREATE INDEX spend_events_tenant_time_idx ON spend_events (tenant, occurred_at);
CREATE INDEX spend_events_time_idx ON spend_events (occurred_at);

-- Bring-your-own provider keys, encrypted with the silo's credentials key (AES-256-GCM). The
-- secret never leaves the server except towards LiteLLM.
CREATE TABLE provider_credentials (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CONSTRAINT provider_credentials_name_valid CHECK (name ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
    provider    text NOT NULL CONSTRAINT provider_credentials_provider_valid CHECK (provider IN ('openai', 'anthropic', 'azure', 'gemini', 'mistral', 'openai-compatible')),
    api_base    text CONSTRAINT provider_credentials_api_base_valid CHECK (api_base ~ '^https?://'),
    nonce       bytea NOT NULL CONSTRAINT provider_credentials_nonce_length CHECK (length(nonce) = 12),
    ciphertext  bytea NOT NULL,
    -- The last four characters, to recognise a key.
    hint        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT provider_credentials_name_key UNIQUE (name)
);

-- Deployments: a public model name served by an upstream model. Several deployments of one public
-- name share its traffic by weight.
CREATE TABLE model_definitions (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    public_name    text NOT NULL CONSTRAINT model_definitions_public_name_valid CHECK (public_name ~ '^[a-z0-9]([-a-z0-9._:/]{0,78}[a-z0-9])?$'),
    upstream_model text NOT NULL CONSTRAINT model_definitions_upstream_present CHECK (length(btrim(upstream_model)) BETWEEN 1 AND 200),
    api_base       text CONSTRAINT model_definitions_api_base_valid CHECK (api_base ~ '^https?://'),
    credential_id  uuid REFERENCES provider_credentials (id) ON DELETE RESTRICT,
    weight         integer NOT NULL DEFAULT 1 CONSTRAINT model_definitions_weight_range CHECK (weight BETWEEN 1 AND 1000),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT model_definitions_deployment_key UNIQUE (public_name, upstream_model)
);

-- Fallback chains: when `public_name` fails, try these in order.
CREATE TABLE model_fallbacks (
    public_name   text NOT NULL,
    position      smallint NOT NULL CONSTRAINT model_fallbacks_position_range CHECK (position BETWEEN 0 AND 9),
    fallback_name text NOT NULL,
    PRIMARY KEY (public_name, position),
    CONSTRAINT model_fallbacks_not_self CHECK (public_name <> fallback_name),
    CONSTRAINT model_fallbacks_once UNIQUE (public_name, fallback_name)
);

-- Default models: the silo's, a group's, a user's.
CREATE TABLE model_defaults (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    scope       text NOT NULL CONSTRAINT model_defaults_scope_valid CHECK (scope IN ('silo', 'group', 'user')),
    group_id    uuid REFERENCES groups (id) ON DELETE CASCADE,
    tenant      text REFERENCES tenants (name) ON UPDATE CASCADE ON DELETE CASCADE,
    model       text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT model_defaults_target_matches CHECK (
        (scope = 'silo' AND group_id IS NULL AND tenant IS NULL)
        OR (scope = 'group' AND group_id IS NOT NULL AND tenant IS NULL)
        OR (scope = 'user' AND tenant IS NOT NULL AND group_id IS NULL))
);
CREATE UNIQUE INDEX model_defaults_one_silo_key ON model_defaults (scope) WHERE scope = 'silo';
CREATE UNIQUE INDEX model_defaults_group_key ON model_defaults (group_id) WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX model_defaults_tenant_key ON model_defaults (tenant) WHERE tenant IS NOT NULL;

-- What LiteLLM holds for each user's key, as last observed by the reconciler. The key secret is
-- the user runtime's business (in Kubernetes, a Secret in the silo namespace); the portal keeps
-- only what it needs to converge and to report drift.
CREATE TABLE litellm_keys (
    tenant              text PRIMARY KEY REFERENCES tenants (name) ON UPDATE CASCADE ON DELETE CASCADE,
    key_alias           text NOT NULL CONSTRAINT litellm_keys_alias_key UNIQUE,
    -- LiteLLM's token id (the hashed key), for update/block calls.
    token_id            text NOT NULL,
    -- The secret, encrypted like provider credentials, handed to the user's runtime.
    nonce               bytea NOT NULL,
    ciphertext          bytea NOT NULL,
    -- The key's total spend in LiteLLM when the current period of the user's limit began.
    period_start        timestamptz,
    spend_before_period numeric(18, 6) NOT NULL DEFAULT 0,
    -- What was last applied, and what LiteLLM last reported.
    applied             jsonb NOT NULL DEFAULT '{}'::jsonb,
    observed_spend      numeric(18, 6) NOT NULL DEFAULT 0,
    drift               text,
    synced_at           timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now()
);

-- The reconciler's last pass over LiteLLM, for the pages.
CREATE TABLE litellm_sync (
    id          boolean PRIMARY KEY DEFAULT true CONSTRAINT litellm_sync_single_row CHECK (id),
    finished_at timestamptz,
    ok          boolean NOT NULL DEFAULT false,
    message     text NOT NULL DEFAULT 'LiteLLM has not been reached yet.',
    repaired    integer NOT NULL DEFAULT 0
);
INSERT INTO litellm_sync DEFAULT VALUES;
