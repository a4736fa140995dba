-- +goose Up
-- Dropping the view drops its grants: who may read it (a grant_reader
-- role, a dashboard's) is noted here and granted again after it is created.
SELECT pg_catalog.set_config('pginbox.view_grants',
       coalesce(pg_catalog.string_agg(acl.grantee::regrole::text, ','), ''), true)
FROM pg_catalog.pg_class AS c
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
WHERE c.oid = 'webhooks.payload_15m'::pg_catalog.regclass
  AND acl.privilege_type = 'SELECT' AND acl.grantee <> c.relowner AND acl.grantee <> 0;
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP MATERIALIZED VIEW webhooks.payload_15m;
-- begin sql/src/watch/payload_15m.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.payload_15m: per provider, what the payloads of the last 15
-- minutes say:
--   * Sume job events in a failed terminal state (job.failed, or status ERROR)
--     that carry no error object, which Sume's status mapping rules out;
--   * skew between the time the payload states (webhooks._payload_time) and
--     our receipt, for webhook deliveries only (backfills are late by
--     design): the median of stated - received over any stated time
--     (positive = the provider's clock runs ahead of ours: even a resource's
--     created_at cannot be in the future), and the p99 of the delay
--     received - stated over event times only (timestamp, occurred_at,
--     created), since a created_at may be the creation of a resource
--     (a Shopify order, a long job) long before this event;
--   * the largest payload, in bytes of JSON text when its stored size is at
--     least 8 KiB (smaller stored values are measured as stored).
-- Reading the stated time costs tens of microseconds per event, so it is read
-- from a sample: every event of a provider with up to 4,000 in the window,
-- else every k-th id (k = events / 2,000), i.e. 2,000 to 4,000 per provider
-- whatever the volume. Ids are handed out in arrival order, so the sample
-- is spread evenly over the window. timed and event_timed count the sampled
-- events that state a time and an event time. The cheap columns read every
-- event.
-- It reads webhooks.events, the queue and history together; the bound on
-- received_at (webhooks._window_start: a constant when the refresh is
-- planned) leaves every day slice of history but the last one or two out
-- of the plan (TestWindowViewsReadOnlyTheirDays).
CREATE MATERIALIZED VIEW webhooks.payload_15m AS
WITH volume AS (
    SELECT e.provider, count(*) AS n
    FROM webhooks.events AS e
    WHERE e.received_at >= webhooks._window_start('15 minutes')
      AND e.payload IS NOT NULL
    GROUP BY e.provider
)
SELECT e.provider,
       count(*)                                                           AS received,
       count(*) FILTER (
           WHERE e.event_type LIKE 'job.%'
             AND e.payload ? 'job_id'
             AND (e.event_type = 'job.failed' OR e.payload ->> 'status' = 'ERROR')
             AND jsonb_typeof(e.payload -> 'error') IS DISTINCT FROM 'object')  AS failed_without_error,
       count(p.stated_at)                                                 AS timed,
       count(t.event_at)                                                  AS event_timed,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM p.stated_at - e.received_at))      AS skew_p50_s,
       percentile_cont(0.99) WITHIN GROUP (
           ORDER BY extract(epoch FROM e.received_at - t.event_at))       AS delay_p99_s,
       max(CASE WHEN pg_column_size(e.payload) >= 8192
                THEN octet_length(e.payload::text)
                ELSE pg_column_size(e.payload) END)                       AS max_payload_bytes
FROM webhooks.events AS e
JOIN volume AS v ON v.provider = e.provider
CROSS JOIN LATERAL (
    SELECT e.source <> 'backfill' AND e.id % greatest(1, v.n / 2000) = 0 AS sampled
) AS s
CROSS JOIN LATERAL (
    SELECT CASE WHEN s.sampled
                THEN webhooks._payload_time(e.payload, ARRAY['timestamp', 'occurred_at', 'created']) END AS event_at
) AS t
CROSS JOIN LATERAL (
    SELECT coalesce(t.event_at,
                    CASE WHEN s.sampled THEN webhooks._payload_time(e.payload, ARRAY['created_at']) END) AS stated_at
) AS p
WHERE e.received_at >= webhooks._window_start('15 minutes')
  AND e.payload IS NOT NULL
GROUP BY e.provider
WITH DATA;

CREATE UNIQUE INDEX payload_15m_key ON webhooks.payload_15m (provider);

INSERT INTO webhooks.view_refreshes (view_name, events_high_water)
SELECT 'payload_15m', coalesce(pg_sequence_last_value('webhooks.events_id_seq'::regclass), 0)
ON CONFLICT (view_name) DO NOTHING;

REVOKE ALL ON TABLE webhooks.payload_15m FROM PUBLIC;

COMMENT ON MATERIALIZED VIEW webhooks.payload_15m IS
  'Per provider, events received in the last 15 minutes: Sume failed jobs without an error object, sampled '
  'webhooks (2,000 to 4,000 at most) stating a time (timed) and an event time (event_timed), the median skew of '
  'the stated time against receipt and the p99 delay of receipt after the event time (seconds), the largest '
  'payload (bytes).';
-- end sql/src/watch/payload_15m.sql

-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.view_grants') <> '' THEN
        EXECUTE 'GRANT SELECT ON webhooks.payload_15m TO ' || pg_catalog.current_setting('pginbox.view_grants');
    END IF;
END;
$$;
-- +goose StatementEnd
