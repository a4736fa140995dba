-- +goose Up
-- begin sql/src/watch/_check_rows_at.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._check_rows_at evaluates the query of a keyed check as of a given
-- time: a SELECT returning rows of two columns, a key that casts to text and
-- a value that casts to numeric, run with as_of bound to $1. One row per key
-- with data at that time; the row whose key is NULL is the whole (all keys
-- together). Like webhooks._check_value_at, the query goes on lines of its
-- own and a trailing semicolon is dropped. A key given twice is an error.
--
-- Whoever may write webhooks.checks may run SQL as whoever calls
-- run_checks(): grant it accordingly.
CREATE OR REPLACE FUNCTION webhooks._check_rows_at(query text, as_of timestamptz)
RETURNS TABLE (key text, value numeric)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_keys   text[];
    v_values numeric[];
    v_dup    text;
BEGIN
    PERFORM webhooks._require_text('query', _check_rows_at.query, 100000);
    EXECUTE format(E'SELECT array_agg(q.k::text ORDER BY q.k::text), array_agg(q.v::numeric ORDER BY q.k::text)\nFROM (\n%s\n) AS q(k, v)',
                   regexp_replace(_check_rows_at.query, ';\s*$', ''))
        INTO v_keys, v_values
        USING _check_rows_at.as_of;
    SELECT d.k INTO v_dup
    FROM unnest(v_keys) AS d(k)
    GROUP BY d.k
    HAVING count(*) > 1
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'pginbox: a keyed check''s query gave the key % more than once at %',
            coalesce(quote_literal(v_dup), 'NULL'), _check_rows_at.as_of
            USING ERRCODE = 'cardinality_violation';
    END IF;
    RETURN QUERY SELECT r.k, r.v FROM unnest(v_keys, v_values) AS r(k, v);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._check_rows_at(text, timestamptz) IS
  'Private: runs a keyed check''s query (rows of key, value; the NULL key is the whole) with $1 = as_of and returns '
  'its rows; raises 21000 for a key given twice.';
REVOKE EXECUTE ON FUNCTION webhooks._check_rows_at(text, timestamptz) FROM PUBLIC;
-- end sql/src/watch/_check_rows_at.sql
