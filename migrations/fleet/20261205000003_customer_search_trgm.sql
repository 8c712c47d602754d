-- The customers list's substring search (`name` or `display_name` ILIKE '%…%') through trigram
-- indexes where the pg_trgm extension can be made (a trusted extension since PostgreSQL 13: the
-- database's owner may create it). Where it cannot, the search stays a sequential scan and the
-- fleet-manager says so when it starts.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%): the customers search scans the table', SQLERRM;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX IF NOT EXISTS cluster_tenants_name_trgm ON cluster_tenants USING gin (name gin_trgm_ops);
        CREATE INDEX IF NOT EXISTS cluster_tenants_display_name_trgm
            ON cluster_tenants USING gin (display_name gin_trgm_ops);
    END IF;
END
$$;
