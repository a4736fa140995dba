-- +goose Up
-- webhooks.reconcile_runs keeps one row per reconciliation pass: when it ran,
-- how long it took and what it found and repaired.
CREATE TABLE webhooks.reconcile_runs (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    duration_ms numeric,
    trigger     text        NOT NULL DEFAULT 'manual',
    counts      jsonb       NOT NULL DEFAULT '{}'::jsonb,

    CONSTRAINT reconcile_runs_counts_check CHECK (jsonb_typeof(counts) = 'object')
);

CREATE INDEX reconcile_runs_started_at_idx ON webhooks.reconcile_runs (started_at);

REVOKE ALL ON TABLE webhooks.reconcile_runs FROM PUBLIC;
REVOKE ALL ON SEQUENCE webhooks.reconcile_runs_id_seq FROM PUBLIC;

COMMENT ON TABLE webhooks.reconcile_runs IS
  'One row per reconciliation pass (webhooks.reconcile()), with its counts and duration.';
