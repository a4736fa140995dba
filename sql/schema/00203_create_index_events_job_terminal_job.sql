-- +goose Up
-- Replaces events_job_terminal_idx, whose key held the job id in full: the
-- payload's top-level job_id (else the external_id) of every terminal job
-- event. A job_id is whatever the sender put there, and a B-tree entry holds
-- at most about 2.7 kB, so a job.completed whose job_id was 6.4 kB of random
-- text failed its INSERT with SQLSTATE 54000 (index row size): the delivery
-- was answered 400, and a provider that retries kept sending it, refused each
-- time, for ever.
--
-- The new index holds the job id only when it is at most 255 bytes (the
-- limit of an external_id, and of an ordering key) and NULL otherwise, so
-- every entry is small whatever the payload. reconcile()'s duplicate_terminal
-- check (_record_contradictions) looks jobs up with this exact expression;
-- a terminal event whose job_id is longer is stored like any other but not
-- checked for a second terminal event, and each pass counts those in
-- "jobs_unchecked".
--
-- Building it reads webhooks.events once and blocks inserts meanwhile (on a
-- large table deliveries are answered 503 and retried by the providers; the
-- index is partial, so it is as large as the terminal job events). To upgrade
-- without that pause, create it CONCURRENTLY first with the same statement
-- (IF NOT EXISTS makes this migration skip it) and drop the old index with
-- DROP INDEX CONCURRENTLY; docs/operations.md shows the statements.
CREATE INDEX IF NOT EXISTS events_job_terminal_job_idx ON webhooks.events (
    provider,
    (CASE WHEN octet_length(coalesce(payload ->> 'job_id', external_id)) <= 255
          THEN coalesce(payload ->> 'job_id', external_id) END),
    id)
    WHERE event_type IN ('job.completed', 'job.failed', 'job.canceled');

DROP INDEX IF EXISTS webhooks.events_job_terminal_idx;
