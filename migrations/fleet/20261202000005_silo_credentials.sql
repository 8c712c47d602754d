-- Each customer's silo has its own credential for the fleet's internal API, minted by the
-- provisioner and stored here only as its SHA-256 (hex). NULL: none issued, or revoked (a rotation
-- clears it; the next reconcile mints a new one). Unique, so one credential names one customer.
ALTER TABLE cluster_tenants
    ADD COLUMN silo_credential_sha256    text UNIQUE
        CONSTRAINT cluster_tenants_silo_credential_is_sha256 CHECK (silo_credential_sha256 ~ '^[0-9a-f]{64}$'),
    ADD COLUMN silo_credential_issued_at timestamptz;
