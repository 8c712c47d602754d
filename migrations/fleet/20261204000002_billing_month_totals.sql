-- Each customer's month as last priced (its draft statement's figures), written in the same
-- transaction as every change that prices it — a usage report that changed a day, a plan
-- assignment — so the billing overview and its trend read one row per customer and month instead
-- of pricing every usage day again. A final statement supersedes its month's row. Amounts in the
-- currency's units, exact.
CREATE TABLE billing_month_totals (
    cluster_tenant text NOT NULL,
    month          date NOT NULL CONSTRAINT billing_month_totals_month_first CHECK (extract(day FROM month) = 1),
    currency       text,
    total          numeric(18, 6) NOT NULL,
    -- The seat and spend lines: what a forecast extends to the month's end.
    usage_amount   numeric(18, 6) NOT NULL,
    corrections    numeric(18, 6) NOT NULL DEFAULT 0,
    -- The monthly minimum of the plan in force on the month's last day.
    minimum        numeric(18, 6),
    -- Active seats on the month's latest reported day.
    last_seats     integer,
    priced_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, month)
);

CREATE INDEX billing_month_totals_month_idx ON billing_month_totals (month, cluster_tenant);
