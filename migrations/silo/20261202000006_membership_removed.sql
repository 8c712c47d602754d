-- A member the fleet no longer lists stays in the read-model as `removed` (never access), so the
-- silo keeps that person's LLM key blocked and knows their sessions were ended; a later
-- admission by the fleet makes the row active again.
ALTER TABLE org_memberships DROP CONSTRAINT org_memberships_status_valid;
ALTER TABLE org_memberships ADD CONSTRAINT org_memberships_status_valid
    CHECK (status IN ('active', 'suspended', 'removed'));
