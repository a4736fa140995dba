-- +goose Up
-- webhooks.checks holds one row per anomaly check. Thresholds are tuned with a
-- plain UPDATE of min_ok / max_ok; a check is switched off with enabled = false.
CREATE TABLE webhooks.checks (
    name        text    PRIMARY KEY,
    family      text    NOT NULL,
    description text    NOT NULL,
    -- the SQL expression that computes the check's value (one numeric).
    query       text    NOT NULL,
    min_ok      numeric,
    max_ok      numeric,
    enabled     boolean NOT NULL DEFAULT true,

    CONSTRAINT checks_name_check CHECK (name ~ '^[a-z][a-z0-9_]*$'),
    CONSTRAINT checks_family_check
        CHECK (family IN ('latency', 'referential', 'volume', 'payload', 'database')),
    CONSTRAINT checks_range_check
        CHECK (min_ok IS NULL OR max_ok IS NULL OR min_ok <= max_ok)
);

REVOKE ALL ON TABLE webhooks.checks FROM PUBLIC;

COMMENT ON TABLE webhooks.checks IS
  'Anomaly checks: a value computed by query must lie within [min_ok, max_ok] (NULL = unbounded).';
