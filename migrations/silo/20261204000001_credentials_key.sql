-- The credentials key that seals this silo's secrets (provider keys, users' LiteLLM keys): its
-- SHA-256 fingerprint per version, so a manager started with another key refuses to start instead
-- of failing to open every secret (or sealing new ones no other replica can open); and the version
-- each sealed value was sealed under, which `opencrane rotate-credentials-key` raises as it
-- re-seals them. Values sealed before this migration are version 1.
CREATE TABLE credentials_keys (
    version     smallint PRIMARY KEY CONSTRAINT credentials_keys_version_positive CHECK (version >= 1),
    fingerprint text NOT NULL CONSTRAINT credentials_keys_fingerprint_hex CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE provider_credentials
    ADD COLUMN key_version smallint NOT NULL DEFAULT 1
        CONSTRAINT provider_credentials_key_version_positive CHECK (key_version >= 1);
ALTER TABLE litellm_keys
    ADD COLUMN key_version smallint NOT NULL DEFAULT 1
        CONSTRAINT litellm_keys_key_version_positive CHECK (key_version >= 1);
