-- Names whose deleted customer's data was kept (terminationPolicy Retain): the silo's database,
-- its users and its sealed provider keys still exist under the name, so a new customer must not
-- inherit them. The name stays held until a platform operator re-attaches the data explicitly
-- (a create with reattachRetained, audited), which removes the tombstone.
CREATE TABLE cluster_tenant_tombstones (
    name          text PRIMARY KEY,
    -- The owners when the teardown ended (subjects), for the operator deciding a re-attach.
    former_owners text[] NOT NULL DEFAULT '{}',
    -- What the teardown kept, in the reconciler's words.
    retained      jsonb NOT NULL DEFAULT '[]'::jsonb
                  CONSTRAINT cluster_tenant_tombstones_retained_array CHECK (jsonb_typeof(retained) = 'array'),
    deleted_at    timestamptz NOT NULL DEFAULT now()
);
