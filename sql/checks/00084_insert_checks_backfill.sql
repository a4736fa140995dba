-- +goose Up
-- backfill_checkpoint_age_seconds: how long ago the oldest provider event log
-- was last read completely. A pass reads up to now minus a small lag after
-- every scheduled reconcile pass, so with the default schedule the value stays
-- near a minute or two; it grows when the provider API refuses the key, keeps
-- failing, or a pass never finishes within its deadline. The default bound,
-- an hour, leaves room for a slow schedule; tighten it with
-- UPDATE webhooks.checks SET max_ok = ... to a few times the schedule.
--
-- backfills_without_expectation is restated to leave out providers with an
-- event log: their backfills come from the provider's own list of what it
-- sent, not from an expectation, and are not a backfill nobody asked for.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok)
VALUES
('backfill_checkpoint_age_seconds', 'referential',
 'Seconds since the provider event log read least recently (webhooks.backfill_checkpoints.read_until) was last read completely: backfill from Stripe''s or GitHub''s log is not keeping up (API key refused, API failing, passes cut short).',
 $q$SELECT max(extract(epoch FROM now() - k.read_until)) FROM webhooks.backfill_checkpoints AS k$q$,
 NULL, 3600),

('backfills_without_expectation', 'referential',
 'Events backfilled in the last 24 h for which no expectation exists, for providers without an event log (those backfill from the provider''s own list): a backfill nobody asked for.',
 $q$SELECT coalesce(sum(h.backfills_unexpected_24h), 0) FROM webhooks.expectation_health AS h
WHERE NOT EXISTS (SELECT FROM webhooks.backfill_checkpoints AS k WHERE k.provider = h.provider)$q$,
 NULL, 0)
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query;
-- +goose StatementEnd
