-- Kubernetes mode: how a user's Tenant resource last differed from the portal's record (shown
-- on the users page until repaired), and when that was observed.
ALTER TABLE tenants ADD COLUMN resource_drift text;
ALTER TABLE tenants ADD COLUMN resource_seen_at timestamptz;
