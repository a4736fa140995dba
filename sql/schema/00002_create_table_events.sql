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
    -- The external_id read as a number, for providers whose ids form a
    -- numeric sequence (find_sequence_gaps()). Filled by Postgres itself at
    -- ingest (a stored generated column: no caller can forget it or get it
    -- wrong) and NULL for every other id, so it costs nothing for
    -- non-numeric providers. Only canonical decimals count: 1 to 18 digits,
    -- no sign, no leading zero (except "0" itself). "007" would otherwise
    -- read as 7 and make the ids "7" and "007" one number; a non-canonical
    -- id is left out of sequence gap detection altogether. 18 digits always
    -- fit in a bigint.
    seq               bigint      GENERATED ALWAYS AS (
        CASE WHEN external_id ~ '^(0|[1-9][0-9]{0,17})$' THEN external_id::bigint END
    ) STORED,

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

-- find_sequence_gaps() reads the received ids of one provider in a window of
-- the sequence from this index, in order: its cost follows the rows present,
-- not the width of the window. Partial, so non-numeric ids take no space.
CREATE INDEX events_provider_seq_idx ON webhooks.events (provider, seq)
    WHERE seq IS NOT NULL;

-- reconcile() flags a second terminal event for a job that already reached
-- one. A job is identified by the payload's top-level job_id, falling back to
-- the external_id (Sume keys job webhooks on job_id, so the two agree for
-- every job webhook, and the fallback still finds a row whose payload prune()
-- has dropped). The check looks up earlier terminal rows of the same
-- (provider, job) here; the index is partial, so only terminal job events pay
-- for it at ingest.
CREATE INDEX events_job_terminal_idx
    ON webhooks.events (provider, (coalesce(payload ->> 'job_id', external_id)), id)
    WHERE event_type IN ('job.completed', 'job.failed', 'job.canceled');

-- The queue_health view counts recently dead events here without scanning
-- the whole table. Partial on dead rows only, so ingestion (which only ever
-- writes pending rows) never touches it; and since status is already in the
-- predicate of events_claimable_idx, the status change that lands a row here
-- breaks no HOT update that was not already broken.
CREATE INDEX events_dead_idx ON webhooks.events (updated_at)
    WHERE status = 'dead';

-- Nothing here is PUBLIC's: roles get access through grant_ingest(),
-- grant_worker() and grant_reader().
REVOKE ALL ON TABLE webhooks.events FROM PUBLIC;
REVOKE ALL ON SEQUENCE webhooks.events_id_seq FROM PUBLIC;

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
COMMENT ON COLUMN webhooks.events.seq IS
  'external_id as a number when it is a canonical decimal of 1 to 18 digits, else NULL (generated). '
  'Used by find_sequence_gaps().';
