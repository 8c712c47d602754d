-- The migration relayed through each silo's own manager (on a cluster the silo's database is
-- closed to the fleet): what the fleet has staged for a customer's silo to take (`delivery`, its
-- parcels below), and what that silo last reported having applied and read back (`delivered`).
ALTER TABLE shared_migrations
    ADD COLUMN delivery  jsonb,
    ADD COLUMN delivered jsonb;

-- The staged rows, one parcel per chunk of one table; deleted as soon as the silo reports the
-- delivery applied (a legacy plaintext provider key travels in one and is sealed by the silo).
CREATE TABLE shared_migration_parcels (
    cluster_tenant text    NOT NULL REFERENCES shared_migrations (cluster_tenant) ON DELETE CASCADE,
    generation     text    NOT NULL,
    seq            integer NOT NULL CHECK (seq >= 0),
    body           jsonb   NOT NULL,
    PRIMARY KEY (cluster_tenant, seq)
);
