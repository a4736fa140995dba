-- +goose Up
-- The referential family, restated: backfill_checkpoint_age_seconds joins it,
-- backfills_without_expectation leaves out providers with an event log, and
-- every check carries its remedy (webhooks.checks.remedy, added by 00197).
-- The other rows are written again unchanged; min_ok, max_ok and enabled,
-- which an operator may have tuned, are never overwritten.
-- begin sql/src/watch/checks_referential.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- Referential checks: do expectations, events and tombstones agree, and is
-- anything stuck where nothing will ever move it? All read
-- webhooks.expectation_health and webhooks.queue_health, or
-- webhooks.backfill_checkpoints. See docs/checks.md.
--
-- backfills_without_expectation leaves out providers with an event log:
-- their backfills come from the provider's own list of what it sent, not
-- from an expectation, and are not a backfill nobody asked for.
--
-- backfill_checkpoint_age_seconds: how long ago the oldest provider event log
-- was last read completely. A pass reads up to now minus a small lag after
-- every scheduled reconcile pass, so with the default schedule the value stays
-- near a minute or two; it grows when the provider API refuses the key, keeps
-- failing, or a pass never finishes within its deadline. The default bound,
-- an hour, leaves room for a slow schedule; tighten it with
-- UPDATE webhooks.checks SET max_ok = ... to a few times the schedule.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, remedy)
VALUES
('gaps_recent', 'referential',
 'Expectations whose deadline passed within the last hour with no event and no tombstone: webhooks that did not arrive in time.',
 $q$SELECT coalesce(sum(h.gaps - h.gaps_over_1h), 0) FROM webhooks.expectation_health AS h$q$,
 NULL, 0,
 'Webhooks did not arrive in time. The NOTIFY triggers reconciliation and backfill; `pginbox gaps` lists them. Usually clears by itself.'),

('gaps_over_1h', 'referential',
 'Expectations more than an hour past their deadline with still no event and no tombstone: backfill is not closing the gaps.',
 $q$SELECT coalesce(sum(h.gaps_over_1h), 0) FROM webhooks.expectation_health AS h$q$,
 NULL, 0,
 'Backfill is not closing gaps: is `PGINBOX_API_URL_<NAME>` set, does the provider API answer (401/5xx in the logs)? `pginbox gaps --backfill`, or `tombstone()` what will never come.'),

('backfills_without_expectation', 'referential',
 'Events backfilled in the last 24 h for which no expectation exists, for providers without an event log (those backfill from the provider''s own list): a backfill nobody asked for.',
 $q$SELECT coalesce(sum(h.backfills_unexpected_24h), 0) FROM webhooks.expectation_health AS h
WHERE NOT EXISTS (SELECT FROM webhooks.backfill_checkpoints AS k WHERE k.provider = h.provider)$q$,
 NULL, 0,
 'Something ingested with `source => ''backfill''` outside the gap workflow, or expectations are deleted too early. Find them: `source = ''backfill''` anti-joined with `expectations`.'),

('backfill_checkpoint_age_seconds', 'referential',
 'Seconds since the provider event log read least recently (webhooks.backfill_checkpoints.read_until) was last read completely: backfill from Stripe''s or GitHub''s log is not keeping up (API key refused, API failing, passes cut short).',
 $q$SELECT max(extract(epoch FROM now() - k.read_until)) FROM webhooks.backfill_checkpoints AS k$q$,
 NULL, 3600,
 'Event-log backfill is not keeping up: `SELECT * FROM webhooks.backfill_checkpoints` (`last_error`); tighten the bound to a few times `PGINBOX_RECONCILE_EVERY`.'),

('tombstones_with_event', 'referential',
 'Tombstones that met their event in the last 24 h: an id written off as never arriving that did arrive (or was tombstoned though present).',
 $q$SELECT coalesce(sum(h.tombstones_with_event_24h), 0) FROM webhooks.expectation_health AS h$q$,
 NULL, 0,
 'The provider''s status API said "unknown" for an id it later delivered: check the status URL and API key; the event itself was ingested normally. Clears after 24 h.'),

('dead_events_24h', 'referential',
 'Events that died (used all their attempts) in the last 24 h.',
 $q$SELECT coalesce(sum(q.dead_24h), 0) FROM webhooks.queue_health AS q$q$,
 NULL, 0,
 'Read `last_error` (`status = ''dead''`), fix the handler, then `replay(event_id, reason)`. Clears after 24 h.'),

('exhausted_pending_events', 'referential',
 'Pending events with no attempts left (attempts >= max_attempts): claim() skips them and nothing kills them.',
 $q$SELECT coalesce(sum(q.exhausted), 0) FROM webhooks.queue_health AS q$q$,
 NULL, 0,
 'Someone lowered `max_attempts` or edited rows by hand. `replay()` them, or raise their `max_attempts`.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        remedy = excluded.remedy;
-- +goose StatementEnd
-- end sql/src/watch/checks_referential.sql
