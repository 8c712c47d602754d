-- The Zitadel organisation a Retain teardown kept (its users are the kept data's owners): a
-- re-attach gives the new customer this organisation back instead of minting a second one
-- (whose instance-unique name would collide with the kept one).
ALTER TABLE cluster_tenant_tombstones ADD COLUMN zitadel_org_id text;
