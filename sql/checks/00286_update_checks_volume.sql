-- +goose Up
-- begin sql/src/watch/checks_volume.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- Volume checks: each provider against its own recent history
-- (webhooks.traffic_5m, last 24 h). "Recent" is the last 30 minutes; the
-- baseline is the provider's rate from its first event of the window until
-- 30 minutes ago, and needs at least an hour of it. Ratios divide by at least
-- 20 events so a handful of events cannot trip them; traffic_last_hour (at
-- the end) learns its range from the same hour of past weeks instead. See
-- docs/checks.md.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, remedy)
VALUES
('providers_silent', 'volume',
 'Providers that sent nothing in the last 30 minutes although their own baseline (at least 1 h of history in the last 24 h) is 10 or more events per 30 minutes.',
 $q$SELECT count(*)
FROM (SELECT t.provider,
             coalesce(sum(t.received) FILTER (WHERE t.bucket >= now() - interval '30 minutes'), 0) AS recent,
             coalesce(sum(t.received) FILTER (WHERE t.bucket < now() - interval '30 minutes'), 0) AS base,
             extract(epoch FROM now() - interval '30 minutes' - min(t.first_received_at)) / 1800 AS periods
      FROM webhooks.traffic_5m AS t
      GROUP BY t.provider) AS s
WHERE s.periods >= 2 AND s.recent = 0 AND s.base / s.periods >= 10$q$,
 NULL, 0,
 'The provider stopped sending or cannot reach you: DNS, TLS, firewall, a rotated secret (401s in the runner log), the endpoint disabled on the provider''s side. Bursty providers (nightly batches): disable or raise.'),

('provider_spike_ratio', 'volume',
 'Largest ratio of a provider''s events in the last 30 minutes to its own baseline per 30 minutes (at least 10), among providers with at least 1 h of history.',
 $q$SELECT max(s.recent / greatest(s.base / s.periods, 10))
FROM (SELECT t.provider,
             coalesce(sum(t.received) FILTER (WHERE t.bucket >= now() - interval '30 minutes'), 0) AS recent,
             coalesce(sum(t.received) FILTER (WHERE t.bucket < now() - interval '30 minutes'), 0) AS base,
             extract(epoch FROM now() - interval '30 minutes' - min(t.first_received_at)) / 1800 AS periods
      FROM webhooks.traffic_5m AS t
      GROUP BY t.provider) AS s
WHERE s.periods >= 2$q$,
 NULL, 10,
 'A flood: a provider replaying history, a loop in your system creating jobs, or an attack with valid signatures. Check event types and `queue_depth`.'),

('redelivery_ratio', 'volume',
 'Share of the last hour''s events that a redelivery changed while pending (revision > 1). Exact duplicates write nothing and are not counted here (the runner''s /metrics counts ingest outcomes).',
 $q$SELECT coalesce(sum(t.redelivered), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '1 hour'$q$,
 NULL, 0.25,
 'The provider resends with different payloads: its retries see failures from you (timeouts?), or it is redelivering on demand. Exact duplicates write nothing by design and are not counted here; the runner''s `/metrics` counts ingest outcomes.'),

('backfill_ratio', 'volume',
 'Share of the last 6 hours'' events that came from backfill rather than a webhook: many backfills mean webhooks are being lost.',
 $q$SELECT coalesce(sum(t.backfilled), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '6 hours'$q$,
 NULL, 0.1,
 'Webhooks are being lost: check the provider''s delivery logs, your endpoint''s 4xx/5xx, signature secrets, body limit (413).'),

('retry_ratio', 'volume',
 'Share of the last hour''s events that needed more than one attempt or died: handlers are failing.',
 $q$SELECT coalesce(sum(t.retried), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '1 hour'$q$,
 NULL, 0.2,
 'Handlers are failing: read `last_error` of pending events with `attempts > 1`.'),

('queue_depth', 'volume',
 'Events pending or processing, all providers (webhooks.queue_health).',
 $q$SELECT coalesce(sum(q.pending + q.processing), 0) FROM webhooks.queue_health AS q$q$,
 NULL, 10000,
 'A backlog. Add workers, fix a slow handler; see the latency checks. Raise it if your normal backlog is bigger.'),

('tombstone_ratio', 'volume',
 'Tombstones written in the last 24 h as a share of those plus the events received: many expected ids do not exist at the provider.',
 $q$SELECT coalesce(h.n, 0) / greatest(coalesce(h.n, 0) + coalesce(v.n, 0), 20)
FROM (SELECT sum(x.tombstones_24h) AS n FROM webhooks.expectation_health AS x) AS h,
     (SELECT sum(t.received) AS n FROM webhooks.traffic_5m AS t) AS v$q$,
 NULL, 0.1,
 'Many expected ids do not exist at the provider: `expect()` is called for ids that are never submitted, or with the wrong provider name / id format.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        remedy = excluded.remedy;

-- traffic_last_hour learns its range per provider: traffic has a weekly
-- shape (a quiet weekend, a Monday-morning peak) that no fixed range fits,
-- and a total over all providers hides one provider's outage in the others'
-- volume. It is keyed: one row per provider (its events in the hour before
-- $1) and the total under a NULL key (what a fixed range or the fallback
-- judges). run_checks() evaluates it at the same time in each of the last
-- four weeks (webhooks._learned_keys), so each provider is judged against
-- its own history, and the check's value is the worst provider's distance
-- from its band in half-widths ([-1, 1] is inside).
--
-- A provider is listed at $1 when it was first seen more than an hour
-- before $1 (webhooks.event_types, which refresh_view('event_types') keeps
-- from the events received since its previous run): a silent provider gets
-- a 0 (that is the outage to catch), and a week before it (or pginbox)
-- existed gives it no value at all, rather than a 0 that would drag its
-- median down. A provider whose every type went unseen for 90 days is
-- dropped from event_types, and so from the list. The total is NULL when no
-- provider is listed. What it reads, per evaluation: event_types (a row per
-- provider and type), and the hour before $1 of webhooks.events by
-- received_at: the queue and the one or two day slices of history that hold
-- the hour, never the rest of history (TestTrafficLastHourPlan). $1 is
-- bound as a constant and the hour's start is computed from it in UTC
-- (timestamptz minus an interval is only stable), so both bounds are
-- immutable and the planner itself drops every other slice: it neither
-- opens nor locks them. On a new install the first
-- refresh of event_types reads six weeks back, more than the four weeks
-- (and an hour) the check looks back.
--
-- Its band, per provider: median ± greatest(3 MAD, 10 events, half the
-- median), the lower edge at least a tenth of the median when the median
-- is 50 or more (so an hour with nothing from a provider that usually sends
-- 50 breaches, however odd its last weeks), once 3 of the 4 weeks have a
-- value; the total has no fixed bounds until then.
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, keyed,
                                  range_mode, learn_k, learn_floor, learn_floor_ratio, learn_min_weeks,
                                  learn_zero_floor, remedy)
VALUES
('traffic_last_hour', 'volume',
 'Events received in the last hour per provider, each against the same hour of the week over its last four weeks (learned: median ± greatest(3 MAD, 10, half the median), never down to 0 for a median of 50 or more); the value is the worst provider''s distance from its band in half-widths ([-1, 1] is inside).',
 $q$WITH listed AS (
    SELECT t.provider
    FROM webhooks.event_types AS t
    GROUP BY t.provider
    HAVING min(t.first_seen_at) < $1 - interval '1 hour'
), hour AS (
    SELECT e.provider, count(*) AS n
    FROM webhooks.events AS e
    WHERE e.received_at >= ($1 AT TIME ZONE 'UTC' - interval '1 hour') AT TIME ZONE 'UTC'
      AND e.received_at < $1
    GROUP BY e.provider
)
SELECT l.provider, coalesce(h.n, 0) FROM listed AS l LEFT JOIN hour AS h ON h.provider = l.provider
UNION ALL
SELECT NULL, (SELECT coalesce(sum(h.n), 0) FROM hour AS h) WHERE EXISTS (SELECT FROM listed)$q$,
 NULL, NULL, true, 'learned', 3, 10, 0.5, 3, 50,
 'A provider is far from what this hour of the week usually brings it. Below the band: deliveries from it are being lost or it (or your own submissions) slowed down: check `providers_silent`, its delivery logs, your 4xx/5xx. Above: a burst, a replay or a loop (see `provider_spike_ratio`). A known change of pattern (a launch, a holiday): pin a range of the total with `set_check_range` until the history catches up.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        keyed = excluded.keyed, remedy = excluded.remedy;
-- +goose StatementEnd
-- end sql/src/watch/checks_volume.sql
