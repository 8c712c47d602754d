-- The customers list's search matches one stored, lower-cased column — the name and the display
-- name joined by a line break, which neither may contain — with `LIKE lower(pattern)`. Before,
-- `name ILIKE p OR display_name ILIKE p` folded case per row and per column at every search: the
-- planner costs ILIKE on UTF-8 as cheap and chose a sequential scan that took ~40 ms for 10,000
-- customers. `LIKE` on the stored lowered text scans ~7× faster where pg_trgm is missing, and one
-- trigram index on it answers a search in well under a millisecond where it exists. Replaces
-- the two per-column trigram indexes of 20261205000003.
ALTER TABLE cluster_tenants
    ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (lower(name || E'\n' || display_name)) STORED;

DROP INDEX IF EXISTS cluster_tenants_name_trgm;
DROP INDEX IF EXISTS cluster_tenants_display_name_trgm;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX cluster_tenants_search_trgm ON cluster_tenants USING gin (search_text gin_trgm_ops);
    ELSE
        RAISE NOTICE 'pg_trgm is not available: the customers search scans the table';
    END IF;
END
$$;
