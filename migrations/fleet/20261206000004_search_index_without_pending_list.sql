-- The customers search's trigram index takes new entries straight into the index instead of
-- GIN's pending list. With the list (`fastupdate`, on by default), every row written since the
-- last vacuum waited there, and every search read the whole list: after 10,000 customers were
-- written, a search cost ~10 ms of database time instead of ~3, until autovacuum merged it.
-- A customer row is written rarely (created, status moved), so paying at the write is cheaper.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_class WHERE relname = 'cluster_tenants_search_trgm' AND relkind = 'i') THEN
        ALTER INDEX cluster_tenants_search_trgm SET (fastupdate = off);
        -- Turning the list off leaves what is already in it; merge that now.
        PERFORM gin_clean_pending_list('cluster_tenants_search_trgm'::regclass);
    END IF;
END
$$;
