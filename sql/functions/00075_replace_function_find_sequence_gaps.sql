-- +goose Up
-- find_sequence_gaps, restated with a cap on the window: at most 1,000,000
-- ids per call. The gaps of a window are generated one row per missing id, so
-- a window of 10^18 ids from a reader (who may call it) would spill
-- temporary files until the disk is full (3,000,000 ids already wrote about
-- 143 MB). Everything else is as in the 0.1.0 definition.
-- begin sql/src/recover/find_sequence_gaps.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.find_sequence_gaps lists, for a provider whose ids form a numeric
-- sequence, the ids in [from_seq, to_seq] (both included) that were neither
-- received nor tombstoned, in order, as text (the external_id they would
-- have). Its cost follows the received rows in the window plus the ids it
-- returns, not the width of the window (see webhooks._sequence_gaps); the
-- window holds at most 1,000,000 ids (larger ones raise 54000: split them).
--
-- jit is off for the call: the planner costs the generate_series over the
-- holes at 1,000 rows per hole, so every window looked expensive enough to
-- be JIT-compiled with full optimization — about 180 ms of a 620 ms call on
-- a 1,000,000-id window, for a query that returns a few rows (bench/REPORT.md,
-- section 5). The RETURN QUERY is planned under the function's settings.
--
-- Sequence ids are canonical decimals (no sign, no leading zero) between 0
-- and 999999999999999999; any other external_id of the provider is ignored.
CREATE OR REPLACE FUNCTION webhooks.find_sequence_gaps(provider text, from_seq bigint, to_seq bigint)
RETURNS TABLE (external_id text)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    c_max_window CONSTANT bigint := 1000000;
BEGIN
    PERFORM webhooks._require_text('provider', find_sequence_gaps.provider, 64);
    IF find_sequence_gaps.from_seq IS NULL OR find_sequence_gaps.to_seq IS NULL THEN
        RAISE EXCEPTION 'pginbox: from_seq and to_seq must not be null (got % and %)',
            coalesce(find_sequence_gaps.from_seq::text, 'NULL'), coalesce(find_sequence_gaps.to_seq::text, 'NULL')
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF find_sequence_gaps.from_seq > find_sequence_gaps.to_seq THEN
        RAISE EXCEPTION 'pginbox: from_seq (%) is greater than to_seq (%)',
            find_sequence_gaps.from_seq, find_sequence_gaps.to_seq
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF find_sequence_gaps.from_seq < 0 OR find_sequence_gaps.to_seq > 999999999999999999 THEN
        RAISE EXCEPTION 'pginbox: the window [%, %] is outside the sequence ids 0 to 999999999999999999',
            find_sequence_gaps.from_seq, find_sequence_gaps.to_seq
            USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    -- Within 0..999999999999999999 the difference cannot overflow.
    IF find_sequence_gaps.to_seq - find_sequence_gaps.from_seq + 1 > c_max_window THEN
        RAISE EXCEPTION 'pginbox: the window [%, %] holds % ids; the limit is % ids a call',
            find_sequence_gaps.from_seq, find_sequence_gaps.to_seq,
            find_sequence_gaps.to_seq - find_sequence_gaps.from_seq + 1, c_max_window
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = pg_catalog.format('Split the window into calls of at most %s ids each, e.g. [%s, %s] first.',
                                           c_max_window, find_sequence_gaps.from_seq,
                                           find_sequence_gaps.from_seq + c_max_window - 1);
    END IF;

    RETURN QUERY
    SELECT g.external_id
    FROM webhooks._sequence_gaps(find_sequence_gaps.provider, find_sequence_gaps.from_seq,
                                 find_sequence_gaps.to_seq) AS g;
END;
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION webhooks.find_sequence_gaps(text, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.find_sequence_gaps(text, bigint, bigint) IS
  'For a provider whose ids form a numeric sequence: the ids in [from_seq, to_seq] (inclusive) neither '
  'received nor tombstoned, in order, as text. Cost follows the received rows in the window, not its width. '
  'Raises when from_seq > to_seq, the window leaves 0..999999999999999999, or it holds more than 1,000,000 ids '
  '(54000: split it); non-numeric ids are ignored.';
-- end sql/src/recover/find_sequence_gaps.sql
