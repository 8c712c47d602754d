-- The silo database: one per ClusterTenant, never shared. It starts with the audit log and the
-- OrgMembership read-model projected from the fleet; later migrations add users, groups, policies,
-- budgets and model routing.

-- Memberships as the fleet last reported them. No foreign key (the ClusterTenant lives in the
-- fleet), and deliberately no one-owner index: the fleet allows several Owners and guarantees at
-- least one, and a projection must never fail on a state the fleet considers valid.
CREATE TABLE org_memberships (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    cluster_tenant text NOT NULL,
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

-- Who did what, to what, with which outcome. Append-only by convention; the request id ties an
-- entry to the server log line of the same request.
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL,
    outcome     text NOT NULL
                CONSTRAINT audit_log_outcome_valid CHECK (outcome IN ('success', 'failure', 'denied')),
    request_id  text,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_log_occurred_at_idx ON audit_log (occurred_at DESC, id DESC);
