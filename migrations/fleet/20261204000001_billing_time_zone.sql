-- Each billing account bills in its own time zone (IANA name): its customers' silos report usage
-- in that zone's calendar days, and its months open and close there. Days already held keep the
-- dates they were reported with when the zone changes; the next report uses the new zone.
ALTER TABLE billing_accounts
    ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'
        CONSTRAINT billing_accounts_time_zone_present CHECK (length(btrim(time_zone)) BETWEEN 1 AND 64);
