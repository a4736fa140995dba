-- +goose Up
-- webhooks.checks learns where a check's range comes from. range_mode
-- 'fixed' (every existing check) judges the value against min_ok / max_ok
-- as before. 'learned' judges it against a band taken from the check's own
-- history: the check's query evaluated at the same time of the week in each
-- of the last four weeks, median +- greatest(learn_k * MAD, learn_floor,
-- learn_floor_ratio * |median|). While fewer than learn_min_weeks of those
-- four weeks have a value, the check falls back to min_ok / max_ok.
--
-- Only a query that takes the time it is evaluated at as $1 can be
-- evaluated in the past, so only such a query may be learned
-- (checks_learned_query_check). webhooks.set_check_range pins a fixed
-- range; webhooks.set_check_mode switches a check between the two.
--
-- A keyed check's query returns one row per key (key, value), e.g. per
-- provider, and the whole (all keys together) as the row with a NULL key.
-- Learned, each key is judged against a band from its own history, and the
-- check's value is the worst key's distance from its band; fixed (or while
-- no key has enough history), the whole is judged against min_ok / max_ok.
-- learn_zero_floor: a key whose median is at least this much keeps a lower
-- edge of at least a tenth of its median, so zero always breaches however
-- odd its history (0: no such floor).
-- Adding columns with constant defaults is instant.
ALTER TABLE webhooks.checks
    ADD COLUMN range_mode        text    NOT NULL DEFAULT 'fixed',
    ADD COLUMN learn_k           numeric NOT NULL DEFAULT 3,
    ADD COLUMN learn_floor       numeric NOT NULL DEFAULT 0,
    ADD COLUMN learn_floor_ratio numeric NOT NULL DEFAULT 0,
    ADD COLUMN learn_min_weeks   integer NOT NULL DEFAULT 3,
    ADD COLUMN learn_zero_floor  numeric NOT NULL DEFAULT 0,
    ADD COLUMN keyed             boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT checks_range_mode_check CHECK (range_mode IN ('fixed', 'learned')),
    ADD CONSTRAINT checks_learn_check
        CHECK (learn_k > 0 AND learn_floor >= 0 AND learn_floor_ratio >= 0
               AND learn_min_weeks BETWEEN 1 AND 4 AND learn_zero_floor >= 0),
    ADD CONSTRAINT checks_learned_query_check
        CHECK (range_mode = 'fixed' OR strpos(query, '$1') > 0);

COMMENT ON COLUMN webhooks.checks.range_mode IS
  'fixed: the value must lie in [min_ok, max_ok]. learned: in a band from the check''s own history (same time of '
  'the week, last four weeks), falling back to [min_ok, max_ok] while that history is short. See set_check_mode.';
COMMENT ON COLUMN webhooks.checks.learn_k IS
  'Learned mode: the band is the median +- learn_k times the median absolute deviation (MAD) of the history.';
COMMENT ON COLUMN webhooks.checks.learn_floor IS
  'Learned mode: the band''s half-width is at least this much (in the check''s own unit).';
COMMENT ON COLUMN webhooks.checks.learn_floor_ratio IS
  'Learned mode: the band''s half-width is at least this share of the median.';
COMMENT ON COLUMN webhooks.checks.learn_min_weeks IS
  'Learned mode: how many of the last four weeks must have a value before the band replaces [min_ok, max_ok].';
COMMENT ON COLUMN webhooks.checks.learn_zero_floor IS
  'Learned mode: a key (or the check) whose median is at least this much has a lower edge of at least a tenth of '
  'its median, so zero always breaches however odd its history. 0: no such floor.';
COMMENT ON COLUMN webhooks.checks.keyed IS
  'The query returns one row per key (key, value) plus the whole under a NULL key. Learned: each key against its '
  'own band, the value being the worst key''s distance from its band; fixed or fallback: the whole against [min_ok, max_ok].';
