-- +goose Up
-- begin sql/src/watch/_median.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._median is the exact median of a numeric array (NULLs ignored):
-- the middle value, or the mean of the middle two; NULL for none.
-- percentile_cont would do it in double precision.
CREATE OR REPLACE FUNCTION webhooks._median(vals numeric[])
RETURNS numeric
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT trim_scale(avg(s.v))
    FROM (SELECT x.v, row_number() OVER (ORDER BY x.v) AS rn, count(*) OVER () AS n
          FROM unnest(_median.vals) AS x(v)
          WHERE x.v IS NOT NULL) AS s
    WHERE s.rn IN ((s.n + 1) / 2, (s.n + 2) / 2)
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._median(numeric[]) IS
  'Private: the exact median of a numeric array (NULLs ignored; the mean of the middle two for an even count).';
REVOKE EXECUTE ON FUNCTION webhooks._median(numeric[]) FROM PUBLIC;
-- end sql/src/watch/_median.sql
