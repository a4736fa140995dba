-- +goose Up
-- webhooks.backfill_checkpoints records, per provider whose API keeps a log
-- of the events it sent (Stripe's event list, a GitHub App's delivery log),
-- how far that log has been read completely. Each backfill pass lists the log
-- from read_until minus an overlap up to now minus a small lag, ingests what
-- is not stored, and moves read_until forward only when it read every page of
-- that window: a pass cut short (timeout, 5xx, shutdown, a malformed page)
-- leaves the row as it was. The runner writes it; the counters are for
-- operators and the backfill_checkpoint_age_seconds check.
CREATE TABLE webhooks.backfill_checkpoints (
    provider        text        NOT NULL,
    read_until      timestamptz NOT NULL,
    completed_at    timestamptz NOT NULL DEFAULT now(),
    last_pass_at    timestamptz NOT NULL DEFAULT now(),
    last_listed     bigint      NOT NULL DEFAULT 0,
    last_recovered  bigint      NOT NULL DEFAULT 0,
    last_error      text,
    listed_total    bigint      NOT NULL DEFAULT 0,
    recovered_total bigint      NOT NULL DEFAULT 0,

    CONSTRAINT backfill_checkpoints_pkey PRIMARY KEY (provider),
    CONSTRAINT backfill_checkpoints_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT backfill_checkpoints_counts_check
        CHECK (last_listed >= 0 AND last_recovered >= 0 AND listed_total >= 0 AND recovered_total >= 0)
);

REVOKE ALL ON TABLE webhooks.backfill_checkpoints FROM PUBLIC;

COMMENT ON TABLE webhooks.backfill_checkpoints IS
  'Per provider with an event log (Stripe events, GitHub App deliveries): how far backfill has read the log '
  'completely (read_until) and what its passes found. Written by the runner only; owner only, like the '
  'other runner state.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.read_until IS
  'Every event the provider created before this time has been listed and, if missing, ingested; the next '
  'pass re-reads an overlap before it.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.completed_at IS
  'When the pass that last moved read_until ended.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.last_pass_at IS
  'When the last pass ended, complete or not.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.last_error IS
  'Why the last pass was cut short (no secret, no payload); NULL after a complete pass.';
