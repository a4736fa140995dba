-- +goose Up
-- webhooks.checks learns what to do when a check fires: remedy, written by
-- the check's family source (sql/src/watch/checks_<family>.sql) beside its
-- description and query, and restated by each of its migrations. The console
-- shows it next to a breach and alerts carry it; docs/reference.md's checks
-- table repeats it (TestCheckRemediesMatchReference keeps the two equal).
-- A column of its own rather than a file the runner reads at start: an
-- operator's own check (a plain INSERT) can carry its remedy too.
-- Adding a column with a constant default is instant.
ALTER TABLE webhooks.checks
    ADD COLUMN remedy text NOT NULL DEFAULT '';

COMMENT ON COLUMN webhooks.checks.remedy IS
  'What to do when the check fires, for the console, alerts and operators; empty when nobody wrote one. '
  'Markdown `backticks` mark names and statements.';
