-- Kubernetes mode: how a policy's AccessPolicy resource last differed from its row (the pass
-- repairs it at once; the difference is kept for GET /policies/drift until a pass finds them equal).
ALTER TABLE access_policies ADD COLUMN resource_drift text;
