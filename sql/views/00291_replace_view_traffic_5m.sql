-- +goose Up
-- Dropping the view drops its grants: who may read it (a grant_reader
-- role, a dashboard's) is noted here and granted again after it is created.
SELECT pg_catalog.set_config('pginbox.view_grants',
       coalesce(pg_catalog.string_agg(acl.grantee::regrole::text, ','), ''), true)
FROM pg_catalog.pg_class AS c
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
WHERE c.oid = 'webhooks.traffic_5m'::pg_catalog.regclass
  AND acl.privilege_type = 'SELECT' AND acl.grantee <> c.relowner AND acl.grantee <> 0;
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP MATERIALIZED VIEW webhooks.traffic_5m;
-- begin sql/src/watch/traffic_5m.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.traffic_5m: per provider and 5-minute bucket of received_at, over
-- the last 24 hours, what arrived and what became of it. The volume checks
-- compare a provider's last 30 minutes with its own earlier rate from here;
-- the status page charts it. Reads only the last day of events, whatever
-- the days kept.
--
-- Duplicates write nothing (ingest_webhook's ON CONFLICT ... WHERE false), so
-- they cannot be counted here; redelivered counts redeliveries that did
-- change a pending event (revision > 1).
-- It reads webhooks.events, the queue and history together; the bound on
-- received_at (webhooks._window_start: a constant when the refresh is
-- planned) leaves every day slice of history but the last two out of the
-- plan (TestWindowViewsReadOnlyTheirDays).
CREATE MATERIALIZED VIEW webhooks.traffic_5m AS
SELECT e.provider,
       date_bin('5 minutes', e.received_at, timestamptz '2000-01-01 00:00:00+00') AS bucket,
       count(*)                                                      AS received,
       count(*) FILTER (WHERE e.source = 'backfill')                 AS backfilled,
       count(*) FILTER (WHERE e.revision > 1)                        AS redelivered,
       count(*) FILTER (WHERE e.attempts > 1 OR e.status = 'dead')   AS retried,
       count(*) FILTER (WHERE e.status = 'processed')                AS processed,
       count(*) FILTER (WHERE e.status = 'dead')                     AS dead,
       count(*) FILTER (WHERE e.status IN ('pending', 'processing')) AS waiting,
       min(e.received_at)                                            AS first_received_at,
       max(e.received_at)                                            AS last_received_at,
       max(e.processed_at)                                           AS last_processed_at,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.received_at))  AS wait_p50_s,
       percentile_cont(0.99) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.received_at))  AS wait_p99_s,
       percentile_cont(0.99) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.processed_at - e.claimed_at))   AS handler_p99_s
FROM webhooks.events AS e
WHERE e.received_at >= webhooks._window_start('24 hours')
GROUP BY 1, 2
WITH DATA;

-- REFRESH ... CONCURRENTLY needs a unique index on plain columns.
CREATE UNIQUE INDEX traffic_5m_key ON webhooks.traffic_5m (provider, bucket);

INSERT INTO webhooks.view_refreshes (view_name, events_high_water)
SELECT 'traffic_5m', coalesce(pg_sequence_last_value('webhooks.events_id_seq'::regclass), 0)
ON CONFLICT (view_name) DO NOTHING;

REVOKE ALL ON TABLE webhooks.traffic_5m FROM PUBLIC;

COMMENT ON MATERIALIZED VIEW webhooks.traffic_5m IS
  'Per provider and 5-minute bucket of received_at, last 24 h: received, backfilled, redelivered (revision > 1), '
  'retried, processed, dead, waiting, and received->processed / claimed->processed percentiles (seconds).';
-- end sql/src/watch/traffic_5m.sql

-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.view_grants') <> '' THEN
        EXECUTE 'GRANT SELECT ON webhooks.traffic_5m TO ' || pg_catalog.current_setting('pginbox.view_grants');
    END IF;
END;
$$;
-- +goose StatementEnd
