-- What DNS and TLS really serve for each customer's hosts, as the fleet's probes last saw it
-- (pages render from here; the probes run in the background and on `POST …/refresh`).
CREATE TABLE dns_checks (
    cluster_tenant text NOT NULL REFERENCES cluster_tenants (name) ON DELETE CASCADE ON UPDATE CASCADE,
    host           text NOT NULL,
    -- `canonical` (<name>.<base>, the DNSEndpoint's) or `vanity` (the customer's own domain).
    kind           text NOT NULL CONSTRAINT dns_checks_kind_valid CHECK (kind IN ('canonical', 'vanity')),
    record_state   text NOT NULL
                   CONSTRAINT dns_checks_record_state_valid
                   CHECK (record_state IN ('resolves', 'missing', 'wrongAddress', 'unreachable')),
    -- The record check: expected address, what was got, the external-dns ownership record.
    record         jsonb NOT NULL,
    cert_health    text
                   CONSTRAINT dns_checks_cert_health_valid
                   CHECK (cert_health IN ('valid', 'expiring', 'expired', 'wrongName', 'unreachable')),
    -- The served certificate (issuer, names, notAfter, …) or {error}.
    certificate    jsonb,
    checked_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, host)
);
