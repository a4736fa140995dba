-- Volume checks: each provider against its own recent history
-- (webhooks.traffic_5m, last 24 h). "Recent" is the last 30 minutes; the
-- baseline is the provider's rate from its first event of the window until
-- 30 minutes ago, and needs at least an hour of it. Ratios divide by at least
-- 20 events so a handful of events cannot trip them. See docs/checks.md.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok)
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
 NULL, 0),

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
 NULL, 10),

('redelivery_ratio', 'volume',
 'Share of the last hour''s events that a redelivery changed while pending (revision > 1). Exact duplicates write nothing and are not counted here (the runner''s /metrics counts ingest outcomes).',
 $q$SELECT coalesce(sum(t.redelivered), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '1 hour'$q$,
 NULL, 0.25),

('backfill_ratio', 'volume',
 'Share of the last 6 hours'' events that came from backfill rather than a webhook: many backfills mean webhooks are being lost.',
 $q$SELECT coalesce(sum(t.backfilled), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '6 hours'$q$,
 NULL, 0.1),

('retry_ratio', 'volume',
 'Share of the last hour''s events that needed more than one attempt or died: handlers are failing.',
 $q$SELECT coalesce(sum(t.retried), 0) / greatest(coalesce(sum(t.received), 0), 20)
FROM webhooks.traffic_5m AS t WHERE t.bucket >= now() - interval '1 hour'$q$,
 NULL, 0.2),

('queue_depth', 'volume',
 'Events pending or processing, all providers (webhooks.queue_health).',
 $q$SELECT coalesce(sum(q.pending + q.processing), 0) FROM webhooks.queue_health AS q$q$,
 NULL, 10000),

('tombstone_ratio', 'volume',
 'Tombstones written in the last 24 h as a share of those plus the events received: many expected ids do not exist at the provider.',
 $q$SELECT coalesce(h.n, 0) / greatest(coalesce(h.n, 0) + coalesce(v.n, 0), 20)
FROM (SELECT sum(x.tombstones_24h) AS n FROM webhooks.expectation_health AS x) AS h,
     (SELECT sum(t.received) AS n FROM webhooks.traffic_5m AS t) AS v$q$,
 NULL, 0.1)
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query;
-- +goose StatementEnd
