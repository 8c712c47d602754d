-- Rotations of the fleet's Zitadel service-account key. A two-phase rotation (mint → prepared →
-- active → the old key revoked after a grace period) survives a restart of the fleet mid-way:
-- the phase and the key ids are here, the key material only in the Kubernetes Secret. No key
-- material is ever stored in this table.
CREATE TABLE zitadel_key_rotations (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    method           text NOT NULL CONSTRAINT zitadel_key_rotations_method_valid CHECK (method IN ('upload', 'minted')),
    state            text NOT NULL
                     CONSTRAINT zitadel_key_rotations_state_valid CHECK (state IN ('prepared', 'active', 'done', 'cancelled')),
    key_id           text NOT NULL,
    previous_key_id  text,
    key_expires_at   timestamptz,
    prepared_at      timestamptz NOT NULL DEFAULT now(),
    activated_at     timestamptz,
    revoke_after     timestamptz,
    revoked_at       timestamptz,
    actor            text NOT NULL
);

-- At most one rotation under way.
CREATE UNIQUE INDEX zitadel_key_rotations_one_open ON zitadel_key_rotations ((true))
    WHERE state IN ('prepared', 'active');
