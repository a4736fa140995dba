-- +goose Up
-- history_other_source_received_idx: webhooks.history's copy of
-- events_other_source_status_received_idx (00099), for the processed events
-- that did not come in through the webhook endpoint (a backfill, an import).
-- The console's list and counts filtered on such a source, and the backfill
-- counts of expectation_health and of the console's overview, read each day
-- slice through it, newest first, instead of walking every event of the day
-- to find a handful (TestConsoleSourceFilterUsesPartialIndex,
-- TestWindowReadersScanOnlyTheirDays).
--
-- What it costs: a move into history (move_history) writes an entry only for
-- an event whose source is not 'webhook', a small share; webhook deliveries,
-- the bulk, write none. The source leads the key, so a filter on one source
-- (backfill) reads only its entries, ordered by receipt within it.
--
-- Created on the partitioned table: every day slice gets its own copy, the
-- slices attached later too (webhooks._history_slice). On an upgrade history
-- is still empty when this runs (rows move into it afterwards).
CREATE INDEX history_other_source_received_idx ON webhooks.history (source, received_at, id)
    WHERE source <> 'webhook';
