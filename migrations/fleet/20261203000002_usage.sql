-- Usage each silo reports for billing (over the internal API, with its own credential): one row
-- per customer and day — the day in the billing time zone the fleet tells the silo (UTC until
-- billing accounts carry one) — with the active seats and the LLM spend per model and currency.
-- No foreign key to cluster_tenants: billing history outlives a deleted customer. A report for a
-- day already held changes nothing when it is the same (a retry or a duplicate); a different one
-- (a late LiteLLM log, a correction) replaces it, bumps the revision and keeps what it replaced.
CREATE TABLE usage_days (
    cluster_tenant    text NOT NULL,
    day               date NOT NULL,
    active_seats      integer NOT NULL CONSTRAINT usage_days_seats_range CHECK (active_seats >= 0),
    revision          integer NOT NULL DEFAULT 1 CONSTRAINT usage_days_revision_range CHECK (revision >= 1),
    first_reported_at timestamptz NOT NULL DEFAULT now(),
    reported_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, day)
);

CREATE TABLE usage_spend (
    cluster_tenant text NOT NULL,
    day            date NOT NULL,
    model          text NOT NULL CONSTRAINT usage_spend_model_present CHECK (length(model) BETWEEN 1 AND 200),
    currency       text NOT NULL CONSTRAINT usage_spend_currency_valid CHECK (currency ~ '^[A-Z]{3}$'),
    amount         numeric(18, 6) NOT NULL CONSTRAINT usage_spend_amount_range CHECK (amount >= 0),
    PRIMARY KEY (cluster_tenant, day, model, currency),
    FOREIGN KEY (cluster_tenant, day) REFERENCES usage_days (cluster_tenant, day) ON DELETE CASCADE
);

-- What each revision replaced, for the statement's "why did this change".
CREATE TABLE usage_revisions (
    cluster_tenant text NOT NULL,
    day            date NOT NULL,
    revision       integer NOT NULL,
    replaced       jsonb NOT NULL,
    replaced_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, day, revision)
);
