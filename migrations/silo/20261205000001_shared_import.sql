-- Written by `opencrane migrate-shared` in the same transaction as the rows it copied from the
-- original's shared database: at most one import per silo, and a committed copy is never
-- repeated.
CREATE TABLE shared_import (
    id             boolean PRIMARY KEY DEFAULT true CONSTRAINT shared_import_single_row CHECK (id),
    cluster_tenant text NOT NULL,
    -- host:port/database of the source (never a password).
    source         text NOT NULL,
    row_counts     jsonb NOT NULL DEFAULT '{}'::jsonb,
    copied_at      timestamptz NOT NULL DEFAULT now()
);
