-- A customer's people beyond their subjects: invitations by e-mail address (pending until that
-- person's first sign-in through the customer's organisation, then bound to their subject and
-- removed), and when each member last signed in to the silo (reported by the silo).
ALTER TABLE org_memberships ADD COLUMN last_sign_in_at timestamptz;

CREATE TABLE org_invitations (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    cluster_tenant text NOT NULL REFERENCES cluster_tenants (name) ON DELETE CASCADE ON UPDATE CASCADE,
    email          text NOT NULL
                   CONSTRAINT org_invitations_email_valid
                   CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254 AND position('@' IN email) > 1),
    role           text NOT NULL
                   CONSTRAINT org_invitations_role_valid CHECK (role IN ('owner', 'admin', 'member')),
    invited_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT org_invitations_cluster_tenant_email_key UNIQUE (cluster_tenant, email)
);
