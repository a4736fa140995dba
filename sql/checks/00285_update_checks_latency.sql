-- +goose Up
-- begin sql/src/watch/checks_latency.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- Latency checks: is work flowing through the inbox in time? Thresholds are
-- defaults for the default 5-minute lease and 1-minute reconcile / refresh /
-- check schedules; tune them with a plain UPDATE of min_ok / max_ok (a re-run
-- of this migration's statement leaves tuned thresholds alone). Every check
-- is documented in docs/checks.md. refresh_age_seconds looks for the first
-- unseen event among those received in the last day only (computed from $1
-- in UTC, an immutable bound: see view_staleness_seconds in
-- checks_database.sql), so it never opens an older day slice of history
-- (TestStalenessChecksReadOneDay).
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, remedy)
VALUES
('received_to_processed_p50_seconds', 'latency',
 'Median seconds from receipt to completion of the events completed in the last hour, worst provider (webhooks.latency_1h).',
 $q$SELECT max(l.wait_p50_s) FROM webhooks.latency_1h AS l$q$,
 NULL, 60,
 'Workers are not keeping up with typical traffic: check the runner is up (`PGINBOX_WORKERS`, `PGINBOX_HANDLER`), handler errors (`retry_ratio`), `queue_depth`.'),

('received_to_processed_p99_seconds', 'latency',
 '99th percentile of seconds from receipt to completion of the events completed in the last hour, worst provider (webhooks.latency_1h).',
 $q$SELECT max(l.wait_p99_s) FROM webhooks.latency_1h AS l$q$,
 NULL, 900,
 'A tail of slow events: retries with backoff, a slow handler, a backlog burst. Look at `last_error` of recently retried events.'),

('claimed_to_processed_p99_seconds', 'latency',
 '99th percentile of seconds from the last claim to completion (handler time) in the last hour, worst provider; near the lease (5 min) handlers risk losing it.',
 $q$SELECT max(l.handler_p99_s) FROM webhooks.latency_1h AS l$q$,
 NULL, 240,
 'Handlers approach the 5-minute lease and risk losing it (double execution). Speed up the handler, use `heartbeat()`, or raise `PGINBOX_LEASE`.'),

('oldest_pending_seconds', 'latency',
 'Seconds the oldest claimable pending event has been waiting since its run_after (webhooks.queue_health); 0 when none waits.',
 $q$SELECT greatest(0, extract(epoch FROM now() - min(q.oldest_run_after))) FROM webhooks.queue_health AS q$q$,
 NULL, 600,
 'Nobody is claiming, or too slowly: is a runner with a handler (not `none`) running? Workers stuck?'),

('oldest_expired_lease_seconds', 'latency',
 'Seconds since the oldest lease of a processing event expired without being rescued (webhooks.queue_health); 0 when no lease has expired.',
 $q$SELECT greatest(0, extract(epoch FROM now() - min(q.oldest_locked_until))) FROM webhooks.queue_health AS q$q$,
 NULL, 300,
 'Reconciliation is not rescuing leases: is `reconcile()` running (`reconcile_age_seconds`)? Run `SELECT webhooks.reconcile()`.'),

('last_completion_seconds', 'latency',
 'While claimable work waits: seconds since the last completion, or since the oldest waiting event became claimable if later; 0 when nothing waits.',
 $q$SELECT CASE WHEN w.oldest IS NULL OR w.oldest > now() THEN 0
            ELSE extract(epoch FROM now() - greatest(w.oldest, d.last_done)) END
FROM (SELECT min(q.oldest_run_after) AS oldest FROM webhooks.queue_health AS q) AS w,
     (SELECT max(t.last_processed_at) AS last_done FROM webhooks.traffic_5m AS t) AS d$q$,
 NULL, 300,
 'Work waits and nothing completes: workers down, handler failing every time, or the database rejecting `complete()`.'),

('reconcile_age_seconds', 'latency',
 'Seconds since the last reconciliation pass started (webhooks.reconcile_runs), or since the first event of the last 24 h if none ever ran; NULL with no traffic and no open expectation.',
 $q$SELECT CASE WHEN a.active THEN extract(epoch FROM now() - coalesce(r.last_started, a.first_seen)) END
FROM (SELECT max(rr.started_at) AS last_started FROM webhooks.reconcile_runs AS rr) AS r,
     (SELECT min(t.first_received_at) AS first_seen,
             count(*) > 0 OR EXISTS (SELECT FROM webhooks.expectation_health AS h WHERE h.expected_open > 0) AS active
      FROM webhooks.traffic_5m AS t) AS a$q$,
 NULL, 600,
 'The reconcile schedule stopped: check `pginbox serve` (`PGINBOX_RECONCILE_EVERY`) or your cron. If you never reconcile on purpose, disable the check.'),

('refresh_age_seconds', 'latency',
 'Age in seconds of the oldest event of the last day that even the most recently refreshed view has not seen: how long ago the refresher last ran, counted only when events arrived since; 0 otherwise.',
 $q$SELECT coalesce(min(greatest(0, extract(epoch FROM now() - u.received_at))), 0)
FROM webhooks.view_refreshes AS r
LEFT JOIN LATERAL (SELECT e.received_at FROM webhooks.events AS e
                   WHERE e.id > r.events_high_water AND e.received_at >= ($1 AT TIME ZONE 'UTC' - interval '1 day') AT TIME ZONE 'UTC'
                   ORDER BY e.id LIMIT 1) AS u ON true$q$,
 NULL, 300,
 'The view refresher is not running: check the runner''s schedule or cron `SELECT webhooks.refresh_views()`; `NOTICE`s about skipped refreshes mean another refresher holds the lock forever.'),

('sequence_blocked_seconds', 'latency',
 'Seconds the longest-blocked sequence of an ordered provider (webhooks.ordering) has waited on its head, failing and retried or dead while dead_blocks, since the head first failed: every later event of that key waits (webhooks.blocked_sequences, read live through two partial indexes); NULL when none is blocked.',
 $q$SELECT extract(epoch FROM now() - min(b.blocked_since)) FROM webhooks.blocked_sequences AS b$q$,
 NULL, 600,
 'Every later event of that key waits: `pginbox ordering` or the console''s Ordering section names the head event; read its errors, fix the handler, then `replay(event_id, reason)` a dead head, or `set_ordering(…, dead_blocks => false)`.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        remedy = excluded.remedy;
-- +goose StatementEnd
-- end sql/src/watch/checks_latency.sql
