-- +goose Up
-- The console's event list walks events newest first ((received_at, id)
-- descending) by status, or by provider and status: with these two indexes
-- each page, each time window and each capped per-status count is an index
-- range scan.
CREATE INDEX events_status_received_idx ON webhooks.events (status, received_at, id);
CREATE INDEX events_provider_status_received_idx ON webhooks.events (provider, status, received_at, id);
