-- +goose Up
-- webhooks.backfill_checkpoints gets a resume point: where the last pass of
-- a provider's event log stopped when it was cut short (its deadline, an
-- API error, a shutdown) after reading some pages. read_until still moves
-- only when a window has been read completely; the resume point lets a
-- backlog longer than one pass be read over several: the next pass reads the
-- new entries from the top down to resume_until minus the overlap, then goes
-- on from resume_cursor down to read_until minus the overlap. All three are
-- NULL when the last pass completed (or made no progress from the top).
-- Adding nullable columns is instant.
ALTER TABLE webhooks.backfill_checkpoints
    ADD COLUMN resume_cursor  text,
    ADD COLUMN resume_reached timestamptz,
    ADD COLUMN resume_until   timestamptz,
    ADD CONSTRAINT backfill_checkpoints_resume_check
        CHECK ((resume_cursor IS NULL) = (resume_until IS NULL)
               AND (resume_cursor IS NULL) = (resume_reached IS NULL)
               AND octet_length(resume_cursor) <= 1024);

COMMENT ON COLUMN webhooks.backfill_checkpoints.resume_cursor IS
  'The provider''s cursor of the first page an unfinished pass did not read (Stripe: an event id; GitHub: '
  'the Link cursor); the next pass goes on from it. NULL after a complete pass.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.resume_reached IS
  'The oldest created time the unfinished pass read: how far back the backlog has been read.';
COMMENT ON COLUMN webhooks.backfill_checkpoints.resume_until IS
  'The end of the unfinished pass''s window: everything created between resume_reached and it has been read.';
