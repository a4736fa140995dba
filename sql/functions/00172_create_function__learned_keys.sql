-- +goose Up
-- begin sql/src/watch/_learned_keys.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._learned_keys judges each key of a keyed learned check against
-- its own history: the check's query (webhooks._check_rows_at) evaluated at
-- as_of and at as_of minus 1, 2, 3 and 4 weeks (the same time of the week,
-- as webhooks._learned_range), once per time for all keys. One row per key
-- the query gives at as_of, plus the whole (key NULL, no band):
--
--   value     the key's value at as_of;
--   weeks     how many of the four weeks gave the key a value (a week
--             before the key had data gives none: the query's job);
--   median, min_ok, max_ok
--             its band (webhooks._learned_band), NULL without history;
--   distance  where the value lies against the band, in half-widths of the
--             band on the value's side of the median: 0 at the median, -1
--             at the lower edge, +1 at the upper edge, so the value is in
--             the band exactly when distance is in [-1, 1]. A side of zero
--             width (identical weeks, no floors) gives the value's distance
--             from the median plus 1, so any value past it is outside.
CREATE OR REPLACE FUNCTION webhooks._learned_keys(
    query text, as_of timestamptz, k numeric, floor_abs numeric, floor_ratio numeric, zero_floor numeric)
RETURNS TABLE (key text, value numeric, weeks integer, median numeric, min_ok numeric, max_ok numeric,
               distance numeric)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_keys   text[] := '{}';
    v_weeks  integer[] := '{}';
    v_values numeric[] := '{}';
    v_k      text[];
    v_v      numeric[];
BEGIN
    FOR v_week IN 0..4 LOOP
        SELECT coalesce(array_agg(r.key), '{}'), coalesce(array_agg(r.value), '{}') INTO v_k, v_v
        FROM webhooks._check_rows_at(_learned_keys.query, _learned_keys.as_of - v_week * interval '7 days') AS r;
        v_keys := v_keys || v_k;
        v_values := v_values || v_v;
        v_weeks := v_weeks || array_fill(v_week, ARRAY[cardinality(v_k)]);
    END LOOP;

    RETURN QUERY
    SELECT n.key, n.value, cardinality(h.vals), b.median, b.min_ok, b.max_ok,
           CASE WHEN n.value IS NULL OR b.median IS NULL THEN NULL
                WHEN n.value = b.median THEN 0
                WHEN n.value < b.median THEN
                    CASE WHEN b.min_ok < b.median THEN (n.value - b.median) / (b.median - b.min_ok)
                         ELSE n.value - b.median - 1
                    END
                ELSE
                    CASE WHEN b.max_ok > b.median THEN (n.value - b.median) / (b.max_ok - b.median)
                         ELSE n.value - b.median + 1
                    END
           END
    FROM unnest(v_keys, v_weeks, v_values) AS n(key, week, value)
    CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(p.value), '{}') AS vals
        FROM unnest(v_keys, v_weeks, v_values) AS p(key, week, value)
        WHERE p.key = n.key AND p.week > 0 AND p.value IS NOT NULL
    ) AS h
    CROSS JOIN LATERAL webhooks._learned_band(h.vals, _learned_keys.k, _learned_keys.floor_abs,
                                              _learned_keys.floor_ratio, _learned_keys.zero_floor) AS b
    WHERE n.week = 0;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._learned_keys(text, timestamptz, numeric, numeric, numeric, numeric) IS
  'Private: each key of a keyed learned check as of as_of: its value, weeks of history (same time of the week, last '
  'four weeks), band (webhooks._learned_band) and distance from it in band half-widths ([-1, 1] is inside); the '
  'whole as the NULL key, without a band.';
REVOKE EXECUTE ON FUNCTION webhooks._learned_keys(text, timestamptz, numeric, numeric, numeric, numeric) FROM PUBLIC;
-- end sql/src/watch/_learned_keys.sql
