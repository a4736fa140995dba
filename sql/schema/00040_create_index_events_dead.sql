-- +goose Up
-- events_dead_idx lets the queue_health view count recently dead events
-- without scanning the whole table. Partial on dead rows only, so ingestion
-- (which only ever writes pending rows) never touches it; and since status is
-- already in the predicate of events_claimable_idx, the status change that
-- lands a row here breaks no HOT update that was not already broken.
CREATE INDEX events_dead_idx ON webhooks.events (updated_at)
    WHERE status = 'dead';

-- +goose Down
DROP INDEX webhooks.events_dead_idx;
