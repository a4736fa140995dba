-- +goose Up
-- webhooks.events is the durable queue: one row per provider event, keyed on the
-- provider's own stable id. The unique key (provider, external_id) is what makes
-- ingestion exactly-once; the CHECK constraints make contradictory rows
-- impossible, whatever a caller or a bug tries to write.
CREATE TABLE webhooks.events (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider          text        NOT NULL,
    external_id       text        NOT NULL,
    event_type        text        NOT NULL,
    status            text        NOT NULL DEFAULT 'pending',
    -- NULL only once prune() has dropped the payload of a processed event; the
    -- key stays so late redeliveries are still recognised as duplicates.
    payload           jsonb,
    source            text        NOT NULL DEFAULT 'webhook',
    received_at       timestamptz NOT NULL DEFAULT now(),
    -- 1 when the row is created, +1 each time a redelivery reconciles the
    -- payload of a still-pending event: the explicit created/updated signal
    -- ingest_webhook() returns (no reliance on xmax).
    revision          integer     NOT NULL DEFAULT 1,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    claimed_at        timestamptz,
    processed_at      timestamptz,
    attempts          integer     NOT NULL DEFAULT 0,
    max_attempts      integer     NOT NULL DEFAULT 25,
    run_after         timestamptz NOT NULL DEFAULT now(),
    locked_by         text,
    locked_until      timestamptz,
    last_error        text,
    payload_pruned_at timestamptz,

    CONSTRAINT events_provider_external_id_key UNIQUE (provider, external_id),

    CONSTRAINT events_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT events_external_id_check
        CHECK (btrim(external_id) <> '' AND octet_length(external_id) <= 255),
    CONSTRAINT events_event_type_check
        CHECK (btrim(event_type) <> '' AND octet_length(event_type) <= 255),
    CONSTRAINT events_source_check
        CHECK (btrim(source) <> '' AND octet_length(source) <= 32),
    CONSTRAINT events_status_check
        CHECK (status IN ('pending', 'processing', 'processed', 'dead')),
    CONSTRAINT events_revision_check CHECK (revision >= 1),
    CONSTRAINT events_attempts_check
        CHECK (attempts >= 0 AND max_attempts >= 1 AND attempts <= max_attempts),
    -- processed exactly when processed_at is set.
    CONSTRAINT events_processed_check
        CHECK ((status = 'processed') = (processed_at IS NOT NULL)),
    -- processing exactly when locked (by someone, until some time).
    CONSTRAINT events_locked_check
        CHECK ((status = 'processing') = (locked_by IS NOT NULL)
           AND (locked_by IS NULL) = (locked_until IS NULL)),
    CONSTRAINT events_locked_by_check
        CHECK (locked_by IS NULL OR btrim(locked_by) <> ''),
    -- a claim always counts as an attempt.
    CONSTRAINT events_processing_attempts_check
        CHECK (status <> 'processing' OR (attempts >= 1 AND claimed_at IS NOT NULL)),
    -- a payload may only be missing once the event is done with.
    CONSTRAINT events_payload_check
        CHECK (payload IS NOT NULL OR status = 'processed'),
    CONSTRAINT events_payload_pruned_check
        CHECK ((payload IS NULL) = (payload_pruned_at IS NOT NULL)),
    CONSTRAINT events_dead_check
        CHECK (status <> 'dead' OR last_error IS NOT NULL)
)
WITH (
    -- A queue table churns: every row is updated at least twice. Vacuum and
    -- analyze it far more eagerly than the defaults (20% dead rows), and leave
    -- room on each page for the new row versions.
    fillfactor = 90,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_limit = 2000
);

-- The hot index: claimable rows only, in claim order. It stays as small as the
-- backlog, however many processed rows the table keeps. claim() spells the
-- 'pending' literal out so cached generic plans still match it.
CREATE INDEX events_claimable_idx ON webhooks.events (run_after, id)
    WHERE status = 'pending';

-- Leases to rescue: only rows being processed, ordered by expiry.
CREATE INDEX events_leases_idx ON webhooks.events (locked_until)
    WHERE status = 'processing';

-- Retention: prune() drops payloads of processed events by age. Partial on
-- rows that still have one, so each pass reads only what it can prune.
CREATE INDEX events_unpruned_idx ON webhooks.events (received_at)
    WHERE status = 'processed' AND payload IS NOT NULL;

-- Retention of keys and time-bucketed reads: rows are appended in arrival
-- order, so a BRIN index on received_at costs almost nothing to keep.
CREATE INDEX events_received_at_brin ON webhooks.events USING brin (received_at);

COMMENT ON TABLE webhooks.events IS
  'Every webhook event received, exactly once per (provider, external_id); also the work queue.';
COMMENT ON COLUMN webhooks.events.external_id IS
  'The provider''s stable id for the event (Sume: job_id, the envelope request_id, or id). At most 255 bytes.';
COMMENT ON COLUMN webhooks.events.status IS
  'pending (waiting to be claimed), processing (claimed and locked), processed, or dead (gave up after max_attempts).';
COMMENT ON COLUMN webhooks.events.revision IS
  '1 on first delivery; incremented each time a redelivery reconciled the payload of a pending event.';
COMMENT ON COLUMN webhooks.events.attempts IS
  'How many times the event was claimed; the fencing token passed to complete(), fail() and heartbeat().';

-- +goose Down
DROP TABLE webhooks.events;
