-- +goose Up
-- begin sql/src/watch/_learned_range.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._learned_range is the band a learned check is judged against: its
-- query evaluated at as_of minus 1, 2, 3 and 4 weeks (the same time of the
-- week; '7 days' follows the session's time zone, so a Monday 09:00 stays
-- 09:00 across a daylight-saving change), then
--
--     median +- greatest(k * MAD, floor_abs, floor_ratio * |median|)
--
-- over the weeks that gave a value, the lower edge kept at a tenth of the
-- median or more when the median is at least zero_floor (see
-- webhooks._learned_band). weeks says how many did: the caller falls back
-- to the fixed range when that is too few, and min_ok / max_ok are NULL
-- when it is 0. A week before the check's data existed must give NULL, not
-- 0: the query's job. A keyed check learns per key instead
-- (webhooks._learned_keys).
CREATE OR REPLACE FUNCTION webhooks._learned_range(
    query text, as_of timestamptz, k numeric, floor_abs numeric, floor_ratio numeric, zero_floor numeric,
    OUT min_ok numeric, OUT max_ok numeric, OUT weeks integer)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_values numeric[] := '{}';
    v_value  numeric;
BEGIN
    FOR v_week IN 1..4 LOOP
        v_value := webhooks._check_value_at(_learned_range.query, _learned_range.as_of - v_week * interval '7 days');
        IF v_value IS NOT NULL THEN
            v_values := v_values || v_value;
        END IF;
    END LOOP;
    weeks := cardinality(v_values);
    IF weeks = 0 THEN
        RETURN;
    END IF;
    SELECT b.min_ok, b.max_ok INTO min_ok, max_ok
    FROM webhooks._learned_band(v_values, _learned_range.k, _learned_range.floor_abs, _learned_range.floor_ratio,
                                _learned_range.zero_floor) AS b;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._learned_range(text, timestamptz, numeric, numeric, numeric, numeric) IS
  'Private: a learned check''s band as of as_of: its query at the same time in each of the last four weeks, '
  'median +- greatest(k * MAD, floor_abs, floor_ratio * |median|) (webhooks._learned_band); weeks = how many weeks '
  'gave a value.';
REVOKE EXECUTE ON FUNCTION webhooks._learned_range(text, timestamptz, numeric, numeric, numeric, numeric) FROM PUBLIC;
-- end sql/src/watch/_learned_range.sql
