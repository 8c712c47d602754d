-- The migration from the original's shared database, per customer: how far it got, what the
-- last verification found, and what changed in the source since its copy began.
CREATE TABLE shared_migrations (
    cluster_tenant  text PRIMARY KEY,
    -- host:port/database of the source (never a password).
    source          text NOT NULL,
    phase           text NOT NULL
                    CONSTRAINT shared_migrations_phase_valid
                    CHECK (phase IN ('planned', 'provisioned', 'copied', 'verified', 'cut-over')),
    -- Why the next phase did not happen (a failed verification, an unreachable database); null when fine.
    problem         text,
    -- Per table: rows and newest change in the source when the copy began.
    watermarks      jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- The last verification, per table.
    checks          jsonb NOT NULL DEFAULT '[]'::jsonb,
    copy_started_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
