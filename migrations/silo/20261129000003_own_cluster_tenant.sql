-- The silo's read-model of its own ClusterTenant (display name, phase, suspension, vanity host),
-- learnt from its custom resource or from the fleet. One row at most: the silo serves one customer.

CREATE TABLE own_cluster_tenant (
    name          text PRIMARY KEY,
    display_name  text NOT NULL,
    phase         text NOT NULL,
    suspended     boolean NOT NULL DEFAULT false,
    vanity_domain text,
    -- Where it was learnt: the custom resource, or the fleet's internal API.
    source        text NOT NULL CONSTRAINT own_cluster_tenant_source_valid CHECK (source IN ('resource', 'fleet')),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
