-- +goose Up
-- webhooks.check_results records where each result's range came from.
-- min_ok / max_ok already hold the range the value was judged against (for a
-- learned check, the band of that run); range_source says which it was:
-- 'fixed', 'learned', or 'fallback' (a learned check whose history was too
-- short, judged against the fixed range). history_weeks is how many of the
-- last four weeks gave a value (learned checks only; for a keyed check, the
-- weeks of the key the result is about). detail says, for a keyed learned
-- check, which key was worst and its value and band. Rows written before
-- this migration have NULLs: they were all fixed. Nullable columns: instant.
ALTER TABLE webhooks.check_results
    ADD COLUMN range_source  text,
    ADD COLUMN history_weeks integer,
    ADD COLUMN detail        text,
    ADD CONSTRAINT check_results_range_source_check
        CHECK (range_source IN ('fixed', 'learned', 'fallback'));

COMMENT ON COLUMN webhooks.check_results.range_source IS
  'Where min_ok / max_ok of this result came from: fixed, learned (the band from the check''s history), or '
  'fallback (learned mode, history too short: the fixed range). NULL on rows older than learned thresholds.';
COMMENT ON COLUMN webhooks.check_results.history_weeks IS
  'Learned checks: how many of the last four weeks gave a value for the band.';
COMMENT ON COLUMN webhooks.check_results.detail IS
  'Keyed learned checks: the worst key, its value, its band and median, and the weeks of history behind it.';
