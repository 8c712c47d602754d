-- The identity step (the customer's Zitadel organisation and login app) joins the pipeline,
-- between the DNS record and the silo release (the release carries the login app's ids). The
-- Zitadel ids themselves already live on cluster_tenants (zitadel_*_id).
ALTER TABLE provisioning_steps
    DROP CONSTRAINT provisioning_steps_step_valid,
    ADD CONSTRAINT provisioning_steps_step_valid
        CHECK (step IN ('namespace', 'quota', 'networkPolicy', 'database', 'dns', 'identity', 'release', 'readiness'));
