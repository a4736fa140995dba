-- +goose Up
-- begin sql/src/watch/_learned_band.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._learned_band is the band a learned check (or one key of a keyed
-- check) is judged against, from its history vals (one value per week that
-- gave one):
--
--     median +- greatest(k * MAD, floor_abs, floor_ratio * |median|)
--
-- MAD being the median of the absolute deviations from the median (medians
-- of an even count average the middle two). When zero_floor > 0 and the
-- median is at least zero_floor, the lower edge is raised to at least a
-- tenth of the median: weeks of an odd pattern (an outage, a paused
-- integration) widen the band through the MAD, but never so far that zero
-- from something that usually brings zero_floor or more is normal. All NULL
-- for an empty history.
CREATE OR REPLACE FUNCTION webhooks._learned_band(
    vals numeric[], k numeric, floor_abs numeric, floor_ratio numeric, zero_floor numeric,
    OUT median numeric, OUT min_ok numeric, OUT max_ok numeric)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT b.median,
           CASE WHEN _learned_band.zero_floor > 0 AND b.median >= _learned_band.zero_floor
                THEN greatest(b.median - b.half, b.median / 10)
                ELSE b.median - b.half
           END,
           b.median + b.half
    FROM (SELECT m.median,
                 greatest(_learned_band.k * webhooks._median(ARRAY(SELECT abs(x.v - m.median)
                                                                   FROM unnest(_learned_band.vals) AS x(v))),
                          _learned_band.floor_abs, _learned_band.floor_ratio * abs(m.median)) AS half
          FROM (SELECT webhooks._median(_learned_band.vals) AS median) AS m) AS b
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._learned_band(numeric[], numeric, numeric, numeric, numeric) IS
  'Private: the learned band of a history: median +- greatest(k * MAD, floor_abs, floor_ratio * |median|), the '
  'lower edge raised to a tenth of the median when the median is at least zero_floor (> 0); NULLs for none.';
REVOKE EXECUTE ON FUNCTION webhooks._learned_band(numeric[], numeric, numeric, numeric, numeric) FROM PUBLIC;
-- end sql/src/watch/_learned_band.sql
