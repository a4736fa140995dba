-- +goose Up
-- begin sql/src/watch/checks_payload.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- Payload checks: does what the providers send look like what they usually
-- send? They read webhooks.payload_15m and webhooks.event_types. See
-- docs/checks.md.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok, remedy)
VALUES
('new_event_types', 'payload',
 'Event types first seen in the last hour from a provider known for more than a day and active in the last 8 days: something the provider does not normally send.',
 $q$SELECT count(*)
FROM webhooks.event_types AS t
WHERE t.first_seen_at >= now() - interval '1 hour'
  AND EXISTS (SELECT FROM webhooks.event_types AS o
              WHERE o.provider = t.provider
                AND o.first_seen_at < now() - interval '24 hours'
                AND o.last_seen_at >= now() - interval '8 days')$q$,
 NULL, 0,
 'The provider sends something new: an API version change, a newly enabled event, or a misrouted provider. Make sure your handler knows it. Clears after an hour.'),

('sume_failed_without_error', 'payload',
 'Sume job events of the last 15 minutes in a failed terminal state (job.failed or status ERROR) without an error object, which Sume''s status mapping rules out.',
 $q$SELECT coalesce(sum(p.failed_without_error), 0) FROM webhooks.payload_15m AS p$q$,
 NULL, 0,
 'Sume''s payload contradicts its own status mapping: report it to Sume with the `external_id`; check how your handler treats a failure without a reason.'),

('payload_clock_ahead_seconds', 'payload',
 'Median seconds by which the time a payload states (timestamp, occurred_at, created, else created_at) is ahead of our receipt, worst provider with at least 10 timed webhooks in the last 15 minutes: a clock running ahead.',
 $q$SELECT max(p.skew_p50_s) FROM webhooks.payload_15m AS p WHERE p.timed >= 10$q$,
 NULL, 300,
 'A clock is wrong — ours or the provider''s. Check NTP on the database host; signature timestamp checks (±5 min) will start failing too.'),

('delivery_delay_p99_seconds', 'payload',
 '99th percentile of seconds from the event time a payload states (timestamp, occurred_at, created; not created_at, which may date a resource) to our receipt, worst provider with at least 10 such webhooks in the last 15 minutes: deliveries arriving late (provider retries or backlog, or a clock behind).',
 $q$SELECT max(p.delay_p99_s) FROM webhooks.payload_15m AS p WHERE p.event_timed >= 10$q$,
 NULL, 3600,
 'Deliveries arrive late: the provider is retrying (you were down or answered errors) or has a backlog. Check its delivery dashboard; `gaps_recent` may follow.'),

('payload_max_bytes', 'payload',
 'Largest payload of the last 15 minutes in bytes (JSON text; values stored under 8 KiB as stored). Near the receiver''s body limit (1 MiB by default) deliveries start being refused with 413.',
 $q$SELECT max(p.max_payload_bytes) FROM webhooks.payload_15m AS p$q$,
 NULL, 786432,
 'Payloads approach the receiver''s 1 MiB body limit; larger ones are refused with 413 and lost. Raise the limit before they cross it.')
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query,
        remedy = excluded.remedy;
-- +goose StatementEnd
-- end sql/src/watch/checks_payload.sql
