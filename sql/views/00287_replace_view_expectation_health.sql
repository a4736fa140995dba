-- +goose Up
-- Dropping the view drops its grants: who may read it (a grant_reader
-- role, a dashboard's) is noted here and granted again after it is created.
SELECT pg_catalog.set_config('pginbox.view_grants',
       coalesce(pg_catalog.string_agg(acl.grantee::regrole::text, ','), ''), true)
FROM pg_catalog.pg_class AS c
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
WHERE c.oid = 'webhooks.expectation_health'::pg_catalog.regclass
  AND acl.privilege_type = 'SELECT' AND acl.grantee <> c.relowner AND acl.grantee <> 0;
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP MATERIALIZED VIEW webhooks.expectation_health;
-- begin sql/src/watch/expectation_health.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.expectation_health: per provider, the referential state between
-- what was expected, what arrived and what was written off:
--   * open expectations (no event, no tombstone, met_at not set), how many are
--     past their deadline (gaps), and how many by more than an hour;
--   * tombstones of the last day, and tombstones whose event arrived after all
--     (the provider said the id did not exist, then delivered it), counted
--     for a day from when the two met (reconcile() marks such tombstones
--     resolved and keeps them, so an all-time count would never clear);
--   * backfilled events of the last day, and those no expectation asked for.
-- It computes gaps itself with anti-joins on the base tables, so it works
-- whether or not reconcile() maintains expectations.met_at.
-- Whether a key arrived is read in webhooks.keys, which keeps it after its
-- day of history is dropped. The backfills are read from webhooks.events,
-- the queue and history together; the bound on received_at
-- (webhooks._window_start: a constant when the refresh is planned) leaves
-- every day slice of history but the last two out of the plan
-- (TestWindowViewsReadOnlyTheirDays).
CREATE MATERIALIZED VIEW webhooks.expectation_health AS
SELECT s.provider,
       count(*) FILTER (WHERE s.kind = 'open')                                            AS expected_open,
       count(*) FILTER (WHERE s.kind = 'open' AND s.at < now())                           AS gaps,
       count(*) FILTER (WHERE s.kind = 'open' AND s.at < now() - interval '1 hour')       AS gaps_over_1h,
       min(s.at) FILTER (WHERE s.kind = 'open' AND s.at < now())                          AS oldest_gap_deadline,
       count(*) FILTER (WHERE s.kind = 'tombstone')                                       AS tombstones_24h,
       count(*) FILTER (WHERE s.kind = 'tombstone_with_event')                            AS tombstones_with_event_24h,
       count(*) FILTER (WHERE s.kind = 'backfill')                                        AS backfills_24h,
       count(*) FILTER (WHERE s.kind = 'backfill' AND NOT s.expected)                     AS backfills_unexpected_24h
FROM (
    SELECT x.provider, 'open' AS kind, x.deadline AS at, true AS expected
    FROM webhooks.expectations AS x
    WHERE x.met_at IS NULL
      AND NOT EXISTS (SELECT FROM webhooks.keys AS k
                      WHERE k.provider = x.provider AND k.external_id = x.external_id)
      AND NOT EXISTS (SELECT FROM webhooks.tombstones AS t
                      WHERE t.provider = x.provider AND t.external_id = x.external_id)
    UNION ALL
    SELECT t.provider, 'tombstone', t.created_at, true
    FROM webhooks.tombstones AS t
    WHERE t.created_at >= now() - interval '24 hours'
    UNION ALL
    SELECT t.provider, 'tombstone_with_event', greatest(t.created_at, k.received_at), true
    FROM webhooks.tombstones AS t
    JOIN webhooks.keys AS k ON k.provider = t.provider AND k.external_id = t.external_id
    WHERE greatest(t.created_at, k.received_at) >= now() - interval '24 hours'
    UNION ALL
    SELECT e.provider, 'backfill', e.received_at,
           EXISTS (SELECT FROM webhooks.expectations AS x
                   WHERE x.provider = e.provider AND x.external_id = e.external_id)
    FROM webhooks.events AS e
    WHERE e.received_at >= webhooks._window_start('24 hours')
      AND e.source = 'backfill'
) AS s
GROUP BY s.provider
WITH DATA;

CREATE UNIQUE INDEX expectation_health_key ON webhooks.expectation_health (provider);

INSERT INTO webhooks.view_refreshes (view_name, events_high_water)
SELECT 'expectation_health', coalesce(pg_sequence_last_value('webhooks.events_id_seq'::regclass), 0)
ON CONFLICT (view_name) DO NOTHING;

REVOKE ALL ON TABLE webhooks.expectation_health FROM PUBLIC;

COMMENT ON MATERIALIZED VIEW webhooks.expectation_health IS
  'Per provider: open expectations, gaps (open and past deadline; over 1 h), oldest gap deadline, tombstones of the '
  'last 24 h, tombstones that met their event in the last 24 h, backfilled events of the last 24 h and those with no expectation.';
-- end sql/src/watch/expectation_health.sql

-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.view_grants') <> '' THEN
        EXECUTE 'GRANT SELECT ON webhooks.expectation_health TO ' || pg_catalog.current_setting('pginbox.view_grants');
    END IF;
END;
$$;
-- +goose StatementEnd
