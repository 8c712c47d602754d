-- How many ClusterTenants there are per phase and isolation tier, kept by the database itself, so
-- the customers list's total (and its phase and tier filters) costs one read of at most 18 rows
-- instead of a count over the whole fleet on every page view (issue 20). A statement-level
-- trigger folds each statement's changes into one upsert per group; an update that moves no row
-- between groups (most status writes) touches nothing.
-- Writers wait while the tally is filled, so no change slips between the fill and the trigger.
LOCK TABLE cluster_tenants IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE cluster_tenant_tally (
    phase          text   NOT NULL,
    isolation_tier text   NOT NULL,
    n              bigint NOT NULL,
    PRIMARY KEY (phase, isolation_tier)
);

CREATE FUNCTION cluster_tenant_tally_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM cluster_tenant_tally;
        RETURN NULL;
    END IF;
    -- Groups in a fixed order, so two transactions never wait on each other's rows crosswise.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO cluster_tenant_tally (phase, isolation_tier, n)
        SELECT phase, isolation_tier, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (phase, isolation_tier) DO UPDATE SET n = cluster_tenant_tally.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO cluster_tenant_tally (phase, isolation_tier, n)
        SELECT phase, isolation_tier, -count(*) FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (phase, isolation_tier) DO UPDATE SET n = cluster_tenant_tally.n + excluded.n;
    ELSE
        INSERT INTO cluster_tenant_tally (phase, isolation_tier, n)
        SELECT phase, isolation_tier, sum(delta)
        FROM (SELECT phase, isolation_tier, 1 AS delta FROM new_rows
              UNION ALL
              SELECT phase, isolation_tier, -1 FROM old_rows) AS moved
        GROUP BY 1, 2 HAVING sum(delta) <> 0 ORDER BY 1, 2
        ON CONFLICT (phase, isolation_tier) DO UPDATE SET n = cluster_tenant_tally.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER cluster_tenant_tally_insert AFTER INSERT ON cluster_tenants
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cluster_tenant_tally_apply();
CREATE TRIGGER cluster_tenant_tally_update AFTER UPDATE ON cluster_tenants
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cluster_tenant_tally_apply();
CREATE TRIGGER cluster_tenant_tally_delete AFTER DELETE ON cluster_tenants
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cluster_tenant_tally_apply();
CREATE TRIGGER cluster_tenant_tally_truncate AFTER TRUNCATE ON cluster_tenants
    FOR EACH STATEMENT EXECUTE FUNCTION cluster_tenant_tally_apply();

INSERT INTO cluster_tenant_tally (phase, isolation_tier, n)
SELECT phase, isolation_tier, count(*) FROM cluster_tenants GROUP BY 1, 2;
