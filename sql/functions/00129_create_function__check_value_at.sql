-- +goose Up
-- begin sql/src/watch/_check_value_at.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._check_value_at evaluates the query of one check as of a given
-- time: a SELECT returning at most one row of one column that casts to
-- numeric, run with as_of bound to $1. A query that reads the time from $1
-- (instead of now()) can so be evaluated in the past, which is what a
-- learned range needs (webhooks._learned_range); a query without $1 ignores
-- it. The query is wrapped as a scalar subquery, so zero rows give NULL and
-- more than one row is an error; the wrapping puts the query on lines of its
-- own so a trailing -- comment cannot swallow the closing parenthesis, and a
-- trailing semicolon is dropped.
--
-- Whoever may write webhooks.checks may run SQL as whoever calls
-- run_checks(): grant it accordingly.
CREATE OR REPLACE FUNCTION webhooks._check_value_at(query text, as_of timestamptz)
RETURNS numeric
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_value numeric;
BEGIN
    PERFORM webhooks._require_text('query', _check_value_at.query, 100000);
    EXECUTE format(E'SELECT (\n%s\n)::numeric', regexp_replace(_check_value_at.query, ';\s*$', ''))
        INTO v_value
        USING _check_value_at.as_of;
    RETURN v_value;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._check_value_at(text, timestamptz) IS
  'Private: runs a check''s query (one row of one numeric-castable column, or no row) with $1 = as_of and returns its value.';
REVOKE EXECUTE ON FUNCTION webhooks._check_value_at(text, timestamptz) FROM PUBLIC;
-- end sql/src/watch/_check_value_at.sql
