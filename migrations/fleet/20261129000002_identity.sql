-- Identity: the audit log and the index of signed-in sessions (the session data itself lives in
-- tower-sessions' own table). Both tables are defined identically in the silo schema, so their
-- queries are shared (crates/common-db).

CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    actor_role  text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target      text NOT NULL,
    outcome     text NOT NULL
                CONSTRAINT audit_log_outcome_valid CHECK (outcome IN ('success', 'failure', 'denied')),
    request_id  text,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_log_occurred_at_idx ON audit_log (occurred_at DESC, id DESC);
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id DESC);

-- One row per signed-in browser session: who, from where, since when. Deleting the row and the
-- session record signs the session out on its next request.
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

-- The session records of tower-sessions' Postgres store (its own layout), created here so that
-- the server never runs DDL at request time.
CREATE SCHEMA IF NOT EXISTS tower_sessions;
CREATE TABLE IF NOT EXISTS tower_sessions.session (
    id          text PRIMARY KEY NOT NULL,
    data        bytea NOT NULL,
    expiry_date timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS session_expiry_date_idx ON tower_sessions.session (expiry_date);
