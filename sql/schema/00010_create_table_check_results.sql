-- +goose Up
-- webhooks.check_results is the history of run_checks(): one row per check
-- per run. run_checks() prunes rows older than 7 days itself, so the table
-- stays bounded (about 34 rows a minute at the default schedule).
CREATE TABLE webhooks.check_results (
    run_at      timestamptz NOT NULL,
    name        text        NOT NULL,
    family      text        NOT NULL,
    value       numeric,
    min_ok      numeric,
    max_ok      numeric,
    ok          boolean     NOT NULL,
    -- SQLSTATE and message when the check's query failed (then value is NULL
    -- and ok is false).
    error       text,
    duration_ms numeric,

    CONSTRAINT check_results_pkey PRIMARY KEY (name, run_at)
);

-- Pruning by age reads this index; the primary key serves "latest per check".
CREATE INDEX check_results_run_at_idx ON webhooks.check_results (run_at);

REVOKE ALL ON TABLE webhooks.check_results FROM PUBLIC;

COMMENT ON TABLE webhooks.check_results IS
  'History of webhooks.run_checks(): every check''s value and verdict per run, kept 7 days.';
