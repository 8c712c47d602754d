-- The fleet registry: customers (ClusterTenants), their members and billing accounts.
-- Enumerations are text with CHECK constraints so that adding a value is one ALTER, not a type
-- migration. Name rules mirror app::model::cluster_tenant::validate_name, so a row can never hold a
-- name that would make an invalid namespace (opencrane-<name>) even if a writer skips the service layer.

CREATE TABLE cluster_tenants (
    name                 text PRIMARY KEY
                         CONSTRAINT cluster_tenants_name_format
                         CHECK (name ~ '^[a-z]([-a-z0-9]{0,51}[a-z0-9])?$'),
    display_name         text NOT NULL
                         CONSTRAINT cluster_tenants_display_name_present
                         CHECK (length(btrim(display_name)) BETWEEN 1 AND 128),
    vanity_domain        text
                         CONSTRAINT cluster_tenants_vanity_domain_lower
                         CHECK (vanity_domain = lower(vanity_domain) AND length(vanity_domain) <= 253),
    isolation_tier       text NOT NULL DEFAULT 'shared'
                         CONSTRAINT cluster_tenants_isolation_tier_valid
                         CHECK (isolation_tier IN ('shared', 'dedicatedNodes', 'dedicatedCluster')),
    compute_mode         text NOT NULL DEFAULT 'shared'
                         CONSTRAINT cluster_tenants_compute_mode_valid
                         CHECK (compute_mode IN ('shared', 'dedicated')),
    node_pool            text,
    quota                jsonb NOT NULL DEFAULT '{}'::jsonb
                         CONSTRAINT cluster_tenants_quota_object CHECK (jsonb_typeof(quota) = 'object'),
    seat_cap             integer
                         CONSTRAINT cluster_tenants_seat_cap_non_negative CHECK (seat_cap >= 0),
    phase                text NOT NULL DEFAULT 'pending'
                         CONSTRAINT cluster_tenants_phase_valid
                         CHECK (phase IN ('pending', 'provisioning', 'ready', 'failed', 'suspended', 'deleting')),
    message              text,
    bound_namespace      text,
    provisioner          text,
    zitadel_org_id       text,
    zitadel_project_id   text,
    zitadel_app_id       text,
    zitadel_client_id    text,
    zitadel_redirect_uri text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT cluster_tenants_node_pool_iff_dedicated
        CHECK ((compute_mode = 'dedicated') = (node_pool IS NOT NULL AND length(node_pool) > 0))
);

CREATE UNIQUE INDEX cluster_tenants_vanity_domain_key ON cluster_tenants (vanity_domain);
-- The list page sorts and filters on these.
CREATE INDEX cluster_tenants_created_at_idx ON cluster_tenants (created_at, name);
CREATE INDEX cluster_tenants_display_name_idx ON cluster_tenants (lower(display_name), name);
CREATE INDEX cluster_tenants_phase_idx ON cluster_tenants (phase, name);
CREATE INDEX cluster_tenants_isolation_tier_idx ON cluster_tenants (isolation_tier, name);
CREATE INDEX cluster_tenants_seat_cap_idx ON cluster_tenants (seat_cap, name);

CREATE TABLE org_memberships (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    cluster_tenant text NOT NULL REFERENCES cluster_tenants (name) ON DELETE CASCADE ON UPDATE CASCADE,
    subject        text NOT NULL
                   CONSTRAINT org_memberships_subject_present CHECK (length(btrim(subject)) BETWEEN 1 AND 255),
    role           text NOT NULL
                   CONSTRAINT org_memberships_role_valid CHECK (role IN ('owner', 'admin', 'member')),
    status         text NOT NULL DEFAULT 'active'
                   CONSTRAINT org_memberships_status_valid CHECK (status IN ('active', 'suspended')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT org_memberships_cluster_tenant_subject_key UNIQUE (cluster_tenant, subject)
);

CREATE INDEX org_memberships_subject_idx ON org_memberships (subject);

CREATE TABLE billing_accounts (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    subject      text NOT NULL
                 CONSTRAINT billing_accounts_subject_present CHECK (length(btrim(subject)) BETWEEN 1 AND 255),
    email        text CONSTRAINT billing_accounts_email_lower CHECK (email = lower(email)),
    display_name text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT billing_accounts_subject_key UNIQUE (subject)
);
