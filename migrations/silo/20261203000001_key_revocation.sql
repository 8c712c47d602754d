-- An admin revoked a user's LiteLLM key: the reconciler deletes it in LiteLLM on its next pass
-- (asked for at once) and issues the user a new one; until then the request is shown.
ALTER TABLE litellm_keys ADD COLUMN revoke_requested_at timestamptz;
