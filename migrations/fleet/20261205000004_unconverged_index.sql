-- The reconciler's due list reads only ClusterTenants that are not converged: a partial index on
-- exactly that condition keeps the read proportional to the work, not to the fleet (issue 20).
CREATE INDEX IF NOT EXISTS cluster_tenants_unconverged ON cluster_tenants (created_at, name)
    WHERE deletion_requested_at IS NOT NULL
       OR observed_generation IS DISTINCT FROM generation
       OR phase NOT IN ('ready', 'suspended');
