-- Billing plans an operator defines, and which plan each customer is on from which day. Money is
-- numeric (exact); the markup is a percentage with two places. An assignment holds until the next
-- one of the same customer; the history is never rewritten (a change is a new row).
CREATE TABLE billing_plans (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name            text NOT NULL CONSTRAINT billing_plans_name_present CHECK (length(btrim(name)) BETWEEN 1 AND 80),
    currency        text NOT NULL CONSTRAINT billing_plans_currency_valid CHECK (currency ~ '^[A-Z]{3}$'),
    seat_price      numeric(18, 6) NOT NULL CONSTRAINT billing_plans_seat_price_range CHECK (seat_price >= 0),
    included_seats  integer NOT NULL DEFAULT 0 CONSTRAINT billing_plans_included_range CHECK (included_seats >= 0),
    markup_percent  numeric(7, 2) NOT NULL DEFAULT 0
                    CONSTRAINT billing_plans_markup_range CHECK (markup_percent >= 0 AND markup_percent <= 1000),
    monthly_minimum numeric(18, 6) CONSTRAINT billing_plans_minimum_range CHECK (monthly_minimum >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT billing_plans_name_key UNIQUE (name)
);

CREATE TABLE plan_assignments (
    cluster_tenant text NOT NULL,
    effective_from date NOT NULL,
    plan_id        uuid NOT NULL REFERENCES billing_plans (id) ON DELETE RESTRICT,
    assigned_by    text NOT NULL,
    assigned_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, effective_from)
);
