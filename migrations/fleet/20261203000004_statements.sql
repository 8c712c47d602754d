-- Final statements: a closed month's numbers frozen by an operator (audited). Written in one
-- transaction, so a month is either still a draft (computed on request) or final, never half of
-- each. A usage correction that arrives after a month is final changes nothing here: it shows as
-- a correction line on the next month's statement.
CREATE TABLE statements (
    cluster_tenant text NOT NULL,
    month          date NOT NULL CONSTRAINT statements_month_first CHECK (extract(day FROM month) = 1),
    currency       text,
    total          numeric(18, 6) NOT NULL,
    lines          jsonb NOT NULL CONSTRAINT statements_lines_array CHECK (jsonb_typeof(lines) = 'array'),
    finalised_by   text NOT NULL,
    finalised_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_tenant, month)
);
