-- Runs of the migration from the original's shared database started from the /migrations page:
-- who asked for what, the last thing it did, and its report. A run that is not finished is
-- under way only while its fleet-manager holds the migration's advisory lock (a fleet-manager
-- that stopped mid-run leaves the row unfinished; the page reports it as interrupted).
CREATE TABLE shared_migration_runs (
    id          bigserial PRIMARY KEY,
    -- The last phase asked for.
    until       text NOT NULL
                CONSTRAINT shared_migration_runs_until_valid
                CHECK (until IN ('preflight', 'provision', 'copy', 'verify', 'cut-over')),
    -- Only these customers (every one when empty).
    customers   text[] NOT NULL DEFAULT '{}',
    started_by  text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    -- The last progress line.
    progress    text,
    finished_at timestamptz,
    -- The report (`opencrane migrate-shared`'s JSON), when it got that far.
    report      jsonb,
    -- Why the run as a whole stopped (a source that is not the original's, an unreachable fleet).
    error       text
);
