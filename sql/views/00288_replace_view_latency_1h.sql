-- +goose Up
-- Dropping the view drops its grants: who may read it (a grant_reader
-- role, a dashboard's) is noted here and granted again after it is created.
SELECT pg_catalog.set_config('pginbox.view_grants',
       coalesce(pg_catalog.string_agg(acl.grantee::regrole::text, ','), ''), true)
FROM pg_catalog.pg_class AS c
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
WHERE c.oid = 'webhooks.latency_1h'::pg_catalog.regclass
  AND acl.privilege_type = 'SELECT' AND acl.grantee <> c.relowner AND acl.grantee <> 0;
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP MATERIALIZED VIEW webhooks.latency_1h;
-- begin sql/src/watch/latency_1h.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.latency_1h: per provider, how long the events completed in the
-- last hour took: from receipt to completion (queueing + retries + handler)
-- and from the last claim to completion (the handler alone). Replayed events
-- are left out: their received_at says nothing about today's latency. Events
-- received more than a day ago are left out too, so a refresh reads one day of
-- the table at most; those still waiting show up in oldest_pending_seconds.
-- It reads webhooks.events, the queue and history together; the bound on
-- received_at (webhooks._window_start: a constant when the refresh is
-- planned) leaves every day slice of history but the last two out of the
-- plan (TestWindowViewsReadOnlyTheirDays).
CREATE MATERIALIZED VIEW webhooks.latency_1h AS
SELECT e.provider,
       count(*) AS processed,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.received_at)) AS wait_p50_s,
       percentile_cont(0.99) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.received_at)) AS wait_p99_s,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.claimed_at))  AS handler_p50_s,
       percentile_cont(0.99) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.claimed_at))  AS handler_p99_s
FROM webhooks.events AS e
WHERE e.received_at >= webhooks._window_start('24 hours')
  AND e.status = 'processed'
  AND e.processed_at >= now() - interval '1 hour'
  AND NOT EXISTS (SELECT FROM webhooks.replays AS r WHERE r.event_id = e.id)
GROUP BY e.provider
WITH DATA;

CREATE UNIQUE INDEX latency_1h_key ON webhooks.latency_1h (provider);

INSERT INTO webhooks.view_refreshes (view_name, events_high_water)
SELECT 'latency_1h', coalesce(pg_sequence_last_value('webhooks.events_id_seq'::regclass), 0)
ON CONFLICT (view_name) DO NOTHING;

REVOKE ALL ON TABLE webhooks.latency_1h FROM PUBLIC;

COMMENT ON MATERIALIZED VIEW webhooks.latency_1h IS
  'Per provider, events processed in the last hour (received in the last 24 h, not replayed): count and '
  'p50/p99 of received->processed and claimed->processed, in seconds.';
-- end sql/src/watch/latency_1h.sql

-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.view_grants') <> '' THEN
        EXECUTE 'GRANT SELECT ON webhooks.latency_1h TO ' || pg_catalog.current_setting('pginbox.view_grants');
    END IF;
END;
$$;
-- +goose StatementEnd
