-- +goose Up
-- On a large webhooks.events these builds block ingest until they finish
-- (deliveries are answered 503 meanwhile and retried by the providers). To
-- upgrade without that pause, create the indexes first, outside a
-- transaction, with the same statements plus CONCURRENTLY: the migration
-- then finds them (IF NOT EXISTS). docs/operations.md shows the statements.
-- The console's event list walks events newest first ((received_at, id)
-- descending) by status, or by provider and status: with these two indexes
-- each page, each time window and each capped per-status count is an index
-- range scan.
CREATE INDEX IF NOT EXISTS events_status_received_idx ON webhooks.events (status, received_at, id);
CREATE INDEX IF NOT EXISTS events_provider_status_received_idx ON webhooks.events (provider, status, received_at, id);
