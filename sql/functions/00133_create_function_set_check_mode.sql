-- +goose Up
-- begin sql/src/watch/set_check_mode.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.set_check_mode switches a check between a fixed range and one
-- learned from its history, and optionally tunes the learning (a NULL
-- keeps the current value). 'learned' is refused for a check whose query
-- does not take the time it is evaluated at as $1: such a query cannot be
-- evaluated in the past, so it has no history to learn from. Switching to
-- 'fixed' keeps min_ok / max_ok, which are also the fallback of a learned
-- check whose history is short.
--
-- SECURITY INVOKER: the caller needs UPDATE on webhooks.checks.
CREATE OR REPLACE FUNCTION webhooks.set_check_mode(
    name text, mode text,
    k numeric DEFAULT NULL, floor_abs numeric DEFAULT NULL, floor_ratio numeric DEFAULT NULL,
    min_weeks integer DEFAULT NULL, zero_floor numeric DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_query text;
BEGIN
    IF set_check_mode.mode IS NULL OR set_check_mode.mode NOT IN ('fixed', 'learned') THEN
        RAISE EXCEPTION 'pginbox: range mode must be fixed or learned, not %',
            coalesce(quote_literal(set_check_mode.mode), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.query INTO v_query FROM webhooks.checks AS c WHERE c.name = set_check_mode.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pginbox: no check named %', coalesce(quote_literal(set_check_mode.name), 'NULL')
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM webhooks.checks lists them.';
    END IF;
    IF set_check_mode.mode = 'learned' AND strpos(v_query, '$1') = 0 THEN
        RAISE EXCEPTION 'pginbox: check % cannot learn its range: its query does not take the time as $1',
            set_check_mode.name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'SELECT name FROM webhooks.checks WHERE strpos(query, ''$1'') > 0 lists the checks that can.';
    END IF;
    IF set_check_mode.k <= 0 OR set_check_mode.floor_abs < 0 OR set_check_mode.floor_ratio < 0
       OR set_check_mode.min_weeks NOT BETWEEN 1 AND 4 OR set_check_mode.zero_floor < 0 THEN
        RAISE EXCEPTION 'pginbox: k must be > 0, floor_abs, floor_ratio and zero_floor >= 0, min_weeks 1 to 4 (got %, %, %, %, %)',
            set_check_mode.k, set_check_mode.floor_abs, set_check_mode.floor_ratio, set_check_mode.min_weeks,
            set_check_mode.zero_floor
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE webhooks.checks AS c
    SET range_mode        = set_check_mode.mode,
        learn_k           = coalesce(set_check_mode.k, c.learn_k),
        learn_floor       = coalesce(set_check_mode.floor_abs, c.learn_floor),
        learn_floor_ratio = coalesce(set_check_mode.floor_ratio, c.learn_floor_ratio),
        learn_min_weeks   = coalesce(set_check_mode.min_weeks, c.learn_min_weeks),
        learn_zero_floor  = coalesce(set_check_mode.zero_floor, c.learn_zero_floor)
    WHERE c.name = set_check_mode.name;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.set_check_mode(text, text, numeric, numeric, numeric, integer, numeric) IS
  'Sets a check''s range_mode to fixed or learned (a band from its own history: same time of the week, last four '
  'weeks, median +- greatest(k * MAD, floor_abs, floor_ratio * |median|), the lower edge at least a tenth of a '
  'median of zero_floor or more (0: off), fixed range until min_weeks of them have a value); NULL tuning arguments '
  'keep the current values. Raises 42704 for an unknown check, 22023 for a '
  'bad mode or tuning, or learned for a query without $1. Needs UPDATE on webhooks.checks.';
REVOKE EXECUTE ON FUNCTION webhooks.set_check_mode(text, text, numeric, numeric, numeric, integer, numeric) FROM PUBLIC;
-- end sql/src/watch/set_check_mode.sql
