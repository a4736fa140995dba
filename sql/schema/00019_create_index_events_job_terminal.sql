-- +goose Up
-- reconcile() flags a second terminal event for a job that already reached
-- one. A job is identified by the payload's top-level job_id, falling back to
-- the external_id (Sume keys job webhooks on job_id, so the two agree for
-- every job webhook, and the fallback still finds a row whose payload prune()
-- has dropped). The check looks up earlier terminal rows of the same
-- (provider, job) here; the index is partial, so only terminal job events pay
-- for it at ingest.
CREATE INDEX events_job_terminal_idx
    ON webhooks.events (provider, (coalesce(payload ->> 'job_id', external_id)), id)
    WHERE event_type IN ('job.completed', 'job.failed', 'job.canceled');

-- +goose Down
DROP INDEX webhooks.events_job_terminal_idx;
