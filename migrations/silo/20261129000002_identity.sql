-- Identity: the audit log gains the actor's role; the index of signed-in sessions (shared shape
-- with the fleet, see crates/common-db); and access tokens, which are principals with a role.

ALTER TABLE audit_log ADD COLUMN actor_role text NOT NULL DEFAULT '';
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id DESC);

CREATE TABLE user_sessions (
    session_id   text PRIMARY KEY,
    subject      text NOT NULL,
    email        text,
    display_name text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    ip           text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

CREATE INDEX user_sessions_subject_idx ON user_sessions (subject, last_seen_at DESC);
CREATE INDEX user_sessions_expires_at_idx ON user_sessions (expires_at);

-- `ocp_` tokens: only the SHA-256 of the secret is stored. A token acts with its own role (never
-- more than its creator had), on behalf of the member who created it.
CREATE TABLE access_tokens (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name          text NOT NULL CONSTRAINT access_tokens_name_present CHECK (length(btrim(name)) BETWEEN 1 AND 80),
    owner_subject text NOT NULL,
    role          text NOT NULL CONSTRAINT access_tokens_role_valid CHECK (role IN ('admin', 'member')),
    token_hash    bytea NOT NULL CONSTRAINT access_tokens_token_hash_key UNIQUE,
    prefix        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    last_used_at  timestamptz,
    revoked_at    timestamptz
);

CREATE INDEX access_tokens_owner_idx ON access_tokens (owner_subject, created_at DESC);

-- The session records of tower-sessions' Postgres store (its own layout), created here so that
-- the server never runs DDL at request time.
CREATE SCHEMA IF NOT EXISTS tower_sessions;
CREATE TABLE IF NOT EXISTS tower_sessions.session (
    id          text PRIMARY KEY NOT NULL,
    data        bytea NOT NULL,
    expiry_date timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS session_expiry_date_idx ON tower_sessions.session (expiry_date);
