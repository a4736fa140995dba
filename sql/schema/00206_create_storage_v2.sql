-- +goose Up
-- Storage v2: the permanent keys, the small queue and the history by day.
--
-- Until now one table, webhooks.events, held the dedupe key, the payload and
-- the queue state of every event ever stored, so every claim and completion
-- wrote into indexes that grew with history, and retention updated and
-- deleted history row by row. From here on:
--
--   webhooks.keys     one narrow row per (provider, external_id) ever stored,
--                     with the event's id, received_at and body digest. Its
--                     primary key decides 'created' against 'duplicate', and
--                     a key outlives its event's payload until keep_keys.
--   webhooks.inbox    the former table webhooks.events, renamed: the queue.
--                     New events are inserted here; processed ones leave it
--                     for history in batches (webhooks.move_history()), so it
--                     holds unfinished work and the last moments' processed
--                     events, however much history is kept.
--   webhooks.history  processed events, PARTITION BY RANGE (received_at), one
--                     slice per UTC day (webhooks.history_YYYYMMDD), created
--                     ahead of time and dropped whole by prune().
--   webhooks.events   a view: inbox UNION ALL history, the same 28 columns in
--                     the same order, readable as before (sql/src/store/events.sql,
--                     created by the next migration).
--
-- Renaming keeps the OID, so whatever referred to the table follows it: the
-- sql: handlers created before this release take webhooks.inbox (the row they
-- are given), its grants, triggers and indexes stay. Nothing moves inside
-- this migration: keys of the rows already stored are copied into
-- webhooks.keys, and processed rows moved into history, in batches
-- afterwards (webhooks.move_history(), from the runner's schedule or
-- pg_cron), while ingest runs. Until every old key is copied
-- (webhooks.storage_state.keys_pending), ingest also consults the inbox's old
-- unique key, so no stored key is ever answered 'created' again.
CREATE TABLE webhooks.keys (
    provider    text        NOT NULL,
    external_id text        NOT NULL,
    event_id    bigint      NOT NULL,
    received_at timestamptz NOT NULL,
    body_sha256 bytea,
    seq         bigint GENERATED ALWAYS AS (
        CASE WHEN external_id ~ '^(0|[1-9][0-9]{0,17})$' THEN external_id::bigint END) STORED,
    CONSTRAINT keys_pkey PRIMARY KEY (provider, external_id)
) WITH (fillfactor = 100,
        autovacuum_vacuum_insert_scale_factor = 0.05,
        autovacuum_analyze_scale_factor = 0.02);

CREATE UNIQUE INDEX keys_provider_body_sha256_key ON webhooks.keys (provider, body_sha256)
    WHERE body_sha256 IS NOT NULL;
CREATE INDEX keys_provider_seq_idx ON webhooks.keys (provider, seq) WHERE seq IS NOT NULL;
CREATE INDEX keys_received_at_brin ON webhooks.keys USING brin (received_at);

COMMENT ON TABLE webhooks.keys IS 'Every (provider, external_id) ever stored, until prune(keep_keys): the one arbiter of created against duplicate, kept after the event''s day of history is dropped.';
COMMENT ON COLUMN webhooks.keys.event_id IS 'The id of the event stored under the key (in webhooks.inbox, webhooks.history, or gone with its day).';
COMMENT ON COLUMN webhooks.keys.received_at IS 'When the event was first received; prune() deletes keys older than keep_keys by it.';
COMMENT ON COLUMN webhooks.keys.body_sha256 IS 'SHA-256 of the raw body of a delivery keyed by an unsigned header; unique per provider, kept with the key.';
COMMENT ON COLUMN webhooks.keys.seq IS 'external_id as a number when it is a canonical decimal of 1 to 18 digits, else NULL (generated). Used by find_sequence_gaps().';


CREATE TABLE webhooks.history (
    LIKE webhooks.events INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
    CONSTRAINT history_processed_check CHECK (status = 'processed')
) PARTITION BY RANGE (received_at);

CREATE INDEX history_id_idx ON webhooks.history (id);
CREATE INDEX history_received_idx ON webhooks.history (received_at, id);
CREATE INDEX history_provider_received_idx ON webhooks.history (provider, received_at, id);
CREATE INDEX history_out_of_order_idx ON webhooks.history (provider) WHERE out_of_order;
CREATE INDEX history_job_terminal_job_idx ON webhooks.history (
    provider,
    (CASE WHEN octet_length(coalesce(payload ->> 'job_id', external_id)) <= 255
          THEN coalesce(payload ->> 'job_id', external_id) END),
    id)
    WHERE event_type IN ('job.completed', 'job.failed', 'job.canceled');

COMMENT ON TABLE webhooks.history IS 'Processed events, one slice per UTC day of received_at (webhooks.history_YYYYMMDD); prune() drops whole slices older than keep_payload. Read webhooks.events for every event.';

CREATE TABLE webhooks.history_days (
    day        date        PRIMARY KEY,
    state      text        NOT NULL DEFAULT 'live',
    created_at timestamptz NOT NULL DEFAULT now(),
    dropped_at timestamptz,
    events     bigint,
    min_id     bigint,
    max_id     bigint,
    CONSTRAINT history_days_state_check CHECK (state IN ('live', 'dropped')),
    CONSTRAINT history_days_dropped_check CHECK ((state = 'dropped') = (dropped_at IS NOT NULL))
);
COMMENT ON TABLE webhooks.history_days IS 'One row per day slice of webhooks.history ever created: live, or dropped by prune() (with how many events and which ids it held, so replay() can say why an event is gone).';

CREATE TABLE webhooks.storage_state (
    singleton    boolean     PRIMARY KEY DEFAULT true,
    keys_pending boolean     NOT NULL,
    keys_cursor  bigint      NOT NULL DEFAULT 0,
    keys_copied  bigint      NOT NULL DEFAULT 0,
    moved        bigint      NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL DEFAULT now(),
    keys_done_at timestamptz,
    CONSTRAINT storage_state_singleton_check CHECK (singleton)
);
COMMENT ON TABLE webhooks.storage_state IS 'Progress of the move into storage v2: keys_pending while keys of events stored before it are still being copied into webhooks.keys (done up to the queue id keys_cursor; move_history() goes on to the queue''s newest row), and how many processed events webhooks.move_history() moved.';

INSERT INTO webhooks.storage_state (keys_pending)
SELECT EXISTS (SELECT FROM webhooks.events);


REVOKE ALL ON webhooks.keys, webhooks.history, webhooks.history_days, webhooks.storage_state FROM PUBLIC;

-- The failed attempts, replays and contradictions of an event referred to
-- it with ON DELETE CASCADE: moving a processed event out of the queue into
-- history would have deleted them. They keep the event's id and leave with
-- their own age instead (prune(): errors after keep_payload, replays and
-- contradictions after keep_keys).
ALTER TABLE webhooks.event_errors DROP CONSTRAINT event_errors_event_id_fkey;
ALTER TABLE webhooks.replays DROP CONSTRAINT replays_event_id_fkey;
ALTER TABLE webhooks.contradictions DROP CONSTRAINT contradictions_event_id_fkey;
CREATE INDEX event_errors_at_brin ON webhooks.event_errors USING brin (at);
