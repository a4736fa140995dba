-- Database health checks: the Postgres conditions that degrade a queue
-- (bloat, a held xmin, a stuck notify queue, lock waits) and the health of the
-- views the other checks read. Sessions of other roles are visible in
-- pg_stat_activity only to roles with pg_read_all_stats (e.g. via pg_monitor):
-- grant it to the role that runs the checks. See docs/checks.md.
-- view_staleness_seconds looks for the first event a view has not seen among
-- those received in the last day (as refresh_age_seconds does): a view whose
-- refresh failed for longer still shows about a day, and an old event
-- imported since the last refresh is not staleness. The day's start is
-- computed from $1 (now(), as run_checks() binds it) in UTC: timestamptz
-- minus an interval is only stable, and the planner drops the day slices of
-- history before the bound only when it is immutable; otherwise it opens and
-- locks every slice and leaves the pruning to the executor
-- (TestStalenessChecksReadOneDay).
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, remedy)
VALUES
('events_dead_tuple_ratio', 'database',
 'Dead tuples of webhooks.inbox (the queue) over its live + dead tuples, or 10000 if more (pg_stat_user_tables): vacuum is not keeping up or a held xmin stops it.',
 $q$SELECT s.n_dead_tup::numeric / greatest(s.n_live_tup + s.n_dead_tup, 10000)
FROM pg_catalog.pg_stat_user_tables AS s
WHERE s.relid = 'webhooks.inbox'::regclass$q$,
 NULL, 0.2,
 'Vacuum is not keeping up, or a held xmin stops it (see the two xmin checks). Check `last_autovacuum`, `autovacuum_*` settings, long transactions.'),

('xmin_holder_seconds', 'database',
 'Age in seconds of the oldest transaction of this database (or walsender, or prepared transaction) holding a snapshot or an xid, other than the checker''s: it holds back vacuum''s xmin horizon.',
 $q$SELECT extract(epoch FROM now() - min(x.since))
FROM (SELECT a.xact_start AS since
      FROM pg_catalog.pg_stat_activity AS a
      WHERE a.pid <> pg_backend_pid()
        AND (a.datname = current_database() OR a.backend_type = 'walsender')
        AND a.backend_type <> 'autovacuum worker'
        AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
      UNION ALL
      SELECT p.prepared FROM pg_catalog.pg_prepared_xacts AS p
      WHERE p.database = current_database()) AS x$q$,
 NULL, 600,
 'A long transaction stops vacuum and slows claims. Find it in `pg_stat_activity` (`xact_start`), end it (`pg_terminate_backend`); set `idle_in_transaction_session_timeout`.'),

('xmin_horizon_xid_age', 'database',
 'Transactions since the oldest xmin/xid still held by a session of this database, a walsender, a prepared transaction or a replication slot: catches abandoned slots and prepared transactions, which have no age in seconds.',
 $q$SELECT max(x.age)
FROM (SELECT greatest(age(a.backend_xmin), age(a.backend_xid)) AS age
      FROM pg_catalog.pg_stat_activity AS a
      WHERE a.pid <> pg_backend_pid()
        AND (a.datname = current_database() OR a.backend_type = 'walsender')
        AND a.backend_type <> 'autovacuum worker'
      UNION ALL
      SELECT age(p.transaction) FROM pg_catalog.pg_prepared_xacts AS p
      WHERE p.database = current_database()
      UNION ALL
      SELECT greatest(age(s.xmin), age(s.catalog_xmin)) FROM pg_catalog.pg_replication_slots AS s
      WHERE s.database IS NULL OR s.database = current_database()) AS x$q$,
 NULL, 10000000,
 'An abandoned replication slot or prepared transaction: `pg_replication_slots`, `pg_prepared_xacts`; drop or commit/rollback it.'),

('notify_queue_usage', 'database',
 'Fraction of the server''s NOTIFY queue in use (pg_notification_queue_usage()): a listener idle in a transaction stops it draining, and at 1 every NOTIFY fails at commit.',
 $q$SELECT pg_notification_queue_usage()$q$,
 NULL, 0.25,
 'A listener is idle in a transaction and the queue cannot drain; at 1 every NOTIFY fails at commit. Find sessions that `LISTEN` and are `idle in transaction`.'),

('events_id_used_ratio', 'database',
 'Fraction of the bigint range of event ids (webhooks.inbox.id) already used by its identity sequence.',
 $q$SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('webhooks.inbox', 'id')::regclass), 0)
       / 9223372036854775807::numeric$q$,
 NULL, 0.5,
 'Something burns ids (a sequence reset or huge `setval`, millions of failed inserts). Investigate before it matters.'),

('view_staleness_seconds', 'database',
 'Age in seconds of the oldest event of the last day that the stalest registered view (webhooks.view_refreshes) has not seen yet; 0 when every view has seen every event.',
 $q$SELECT coalesce(max(greatest(0, extract(epoch FROM now() - u.received_at))), 0)
FROM webhooks.view_refreshes AS r
LEFT JOIN LATERAL (SELECT e.received_at FROM webhooks.events AS e
                   WHERE e.id > r.events_high_water AND e.received_at >= ($1 AT TIME ZONE 'UTC' - interval '1 day') AT TIME ZONE 'UTC'
                   ORDER BY e.id LIMIT 1) AS u ON true$q$,
 NULL, 600,
 'One view fails to refresh: look at `webhooks.view_refreshes` and the runner log for its error; run `SELECT webhooks.refresh_view(''<name>'')`.'),

('view_refresh_seconds', 'database',
 'Duration in seconds of the slowest last refresh of a registered view: a refresh holds a snapshot (and so vacuum''s horizon) that long.',
 $q$SELECT max(r.duration_ms) / 1000 FROM webhooks.view_refreshes AS r$q$,
 NULL, 60,
 'A refresh holds a snapshot that long: the table outgrew the windows, or the BRIN index on `received_at` is not summarised (`brin_summarize_new_values`).'),

('lock_wait_seconds', 'database',
 'Seconds the longest-waiting statement of this database has been running while waiting on a lock (pg_stat_activity wait_event_type = Lock).',
 $q$SELECT extract(epoch FROM now() - min(a.query_start))
FROM pg_catalog.pg_stat_activity AS a
WHERE a.datname = current_database()
  AND a.wait_event_type = 'Lock'
  AND a.pid <> pg_backend_pid()$q$,
 NULL, 30,
 'Something holds locks on pginbox rows or tables: a migration, a manual `LOCK`, a long transaction that updated events. Look at `pg_locks` / `pg_blocking_pids()`.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        remedy = excluded.remedy;
-- +goose StatementEnd
