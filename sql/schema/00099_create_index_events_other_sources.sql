-- +goose Up
-- Like 00087's, this build blocks ingest on a large table: create the index
-- CONCURRENTLY first to upgrade without that pause (IF NOT EXISTS).
-- The console's source filter: events that did not come in through the
-- webhook endpoint (backfill, replays from another source) are a small share
-- of the table, so the status index would be walked almost whole to find a
-- page of them. This partial index holds only those rows, newest first by
-- status like events_status_received_idx; webhook ingest, the hot path, never
-- writes to it. The console adds the literal predicate source <> 'webhook'
-- to a filter on any other source so that even a generic plan can use it.
CREATE INDEX IF NOT EXISTS events_other_source_status_received_idx ON webhooks.events (status, received_at, id)
    WHERE source <> 'webhook';
