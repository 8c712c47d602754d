-- Provisioning: the rest of the ClusterTenant's desired state (suspension, retention on deletion,
-- silo version pin), the bookkeeping a controller needs (generation / observedGeneration, the
-- pending deletion, the next automatic retry) and one row per provisioning step, which the
-- console's checklist reads. Both provisioning backends (Kubernetes and local) write the same rows.

ALTER TABLE cluster_tenants
    ADD COLUMN suspended             boolean NOT NULL DEFAULT false,
    ADD COLUMN termination_policy    text NOT NULL DEFAULT 'Retain'
                                     CONSTRAINT cluster_tenants_termination_policy_valid
                                     CHECK (termination_policy IN ('Retain', 'Delete')),
    ADD COLUMN silo_version          text
                                     CONSTRAINT cluster_tenants_silo_version_format
                                     CHECK (silo_version ~ '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$'),
    -- Bumped by every change of the desired state (as Kubernetes bumps metadata.generation).
    ADD COLUMN generation            bigint NOT NULL DEFAULT 1,
    -- The generation the last finished reconcile converged to.
    ADD COLUMN observed_generation   bigint,
    ADD COLUMN silo_url              text,
    -- Set when deletion was asked for; the row goes only when the teardown has finished.
    ADD COLUMN deletion_requested_at timestamptz,
    -- What the teardown kept (Retain): shown until the row goes, and in the audit log after.
    ADD COLUMN retained              jsonb NOT NULL DEFAULT '[]'::jsonb
                                     CONSTRAINT cluster_tenants_retained_array CHECK (jsonb_typeof(retained) = 'array'),
    -- When the reconciler should look again after a failure (exponential backoff); Retry sets now().
    ADD COLUMN next_attempt_at       timestamptz,
    ADD COLUMN failed_attempts       integer NOT NULL DEFAULT 0;

CREATE TABLE provisioning_steps (
    cluster_tenant text NOT NULL REFERENCES cluster_tenants (name) ON DELETE CASCADE ON UPDATE CASCADE,
    step           text NOT NULL
                   CONSTRAINT provisioning_steps_step_valid
                   CHECK (step IN ('namespace', 'quota', 'networkPolicy', 'database', 'dns', 'release', 'readiness')),
    state          text NOT NULL
                   CONSTRAINT provisioning_steps_state_valid
                   CHECK (state IN ('pending', 'running', 'done', 'failed', 'skipped', 'removing', 'removed', 'retained')),
    -- A CamelCase reason, as in Kubernetes conditions.
    reason         text NOT NULL,
    message        text NOT NULL DEFAULT '',
    -- What a person can do about a failure.
    action         text,
    started_at     timestamptz,
    finished_at    timestamptz,
    -- The generation this row describes.
    generation     bigint NOT NULL,
    PRIMARY KEY (cluster_tenant, step)
);
