-- A provider credential is either a key sealed in this database or a reference to a Kubernetes
-- Secret of the silo's namespace (`name` or `name/key`) that the operator manages: read when
-- LiteLLM is converged, never stored here. The last pass's reading problem, if any, is kept for
-- the /models page and the credential's status.
ALTER TABLE provider_credentials
    ALTER COLUMN nonce DROP NOT NULL,
    ALTER COLUMN ciphertext DROP NOT NULL,
    ADD COLUMN secret_ref text
        CONSTRAINT provider_credentials_secret_ref_valid
        CHECK (secret_ref ~ '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?(/[-._a-zA-Z0-9]{1,253})?$'),
    ADD COLUMN secret_status text,
    ADD COLUMN secret_checked_at timestamptz,
    ADD CONSTRAINT provider_credentials_one_source
        CHECK ((secret_ref IS NULL) = (nonce IS NOT NULL AND ciphertext IS NOT NULL));
