-- +goose Up
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP MATERIALIZED VIEW webhooks.queue_health;
-- begin sql/src/watch/queue_health.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.queue_health: per provider, the state of the queue. It reads the
-- pending and processing rows through their partial indexes and the events
-- that died in the last day through events_dead_idx, never the processed bulk
-- of the table. Times are stored as timestamps, not ages, so the checks
-- compute ages against their own now() and an age keeps growing even while
-- the view waits for its next refresh. The oldest claimable run_after leaves
-- out events held behind an earlier event of their sequence (order_held):
-- claim() does not hand them out, and a blocked sequence is what
-- sequence_blocked_seconds reports, not a queue nobody claims from.
-- (Only webhooks.inbox, the queue, holds unfinished events.)
CREATE MATERIALIZED VIEW webhooks.queue_health AS
WITH q AS (
    SELECT e.provider, e.status, e.attempts, e.max_attempts, e.run_after,
           e.received_at, e.locked_until, e.updated_at, e.order_held
    FROM webhooks.inbox AS e
    WHERE e.status = 'pending'
    UNION ALL
    SELECT e.provider, e.status, e.attempts, e.max_attempts, e.run_after,
           e.received_at, e.locked_until, e.updated_at, e.order_held
    FROM webhooks.inbox AS e
    WHERE e.status = 'processing'
    UNION ALL
    SELECT e.provider, e.status, e.attempts, e.max_attempts, e.run_after,
           e.received_at, e.locked_until, e.updated_at, e.order_held
    FROM webhooks.inbox AS e
    WHERE e.status = 'dead' AND e.updated_at >= now() - interval '24 hours'
)
SELECT q.provider,
       count(*) FILTER (WHERE q.status = 'pending')                  AS pending,
       -- pending but out of attempts: claim() skips them and nothing kills them.
       count(*) FILTER (WHERE q.status = 'pending'
                          AND q.attempts >= q.max_attempts)          AS exhausted,
       min(q.run_after) FILTER (WHERE q.status = 'pending'
                                  AND q.attempts < q.max_attempts
                                  AND NOT q.order_held)              AS oldest_run_after,
       min(q.received_at) FILTER (WHERE q.status = 'pending')        AS oldest_pending_received_at,
       count(*) FILTER (WHERE q.status = 'processing')               AS processing,
       min(q.locked_until) FILTER (WHERE q.status = 'processing')    AS oldest_locked_until,
       count(*) FILTER (WHERE q.status = 'dead')                     AS dead_24h,
       max(q.updated_at) FILTER (WHERE q.status = 'dead')            AS last_dead_at
FROM q
GROUP BY q.provider
WITH DATA;

CREATE UNIQUE INDEX queue_health_key ON webhooks.queue_health (provider);

INSERT INTO webhooks.view_refreshes (view_name, events_high_water)
SELECT 'queue_health', coalesce(max(e.id), 0) FROM webhooks.events AS e
ON CONFLICT (view_name) DO NOTHING;

REVOKE ALL ON TABLE webhooks.queue_health FROM PUBLIC;

COMMENT ON MATERIALIZED VIEW webhooks.queue_health IS
  'Per provider: pending (and exhausted: pending with no attempts left), oldest claimable run_after (not held by '
  'ordering), oldest pending '
  'receipt, processing and the earliest lease expiry, events dead in the last 24 h.';
-- end sql/src/watch/queue_health.sql
