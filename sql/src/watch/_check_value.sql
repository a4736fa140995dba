-- +goose StatementBegin
-- webhooks._check_value evaluates the query of one check: a SELECT returning
-- at most one row of one column that casts to numeric. It is wrapped as a
-- scalar subquery, so zero rows give NULL and more than one row is an error;
-- the wrapping puts the query on lines of its own so a trailing -- comment
-- cannot swallow the closing parenthesis, and a trailing semicolon is
-- dropped.
--
-- Whoever may write webhooks.checks may run SQL as whoever calls
-- run_checks(): grant it accordingly.
CREATE OR REPLACE FUNCTION webhooks._check_value(query text)
RETURNS numeric
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_value numeric;
BEGIN
    PERFORM webhooks._require_text('query', _check_value.query, 100000);
    EXECUTE format(E'SELECT (\n%s\n)::numeric', regexp_replace(_check_value.query, ';\s*$', ''))
        INTO v_value;
    RETURN v_value;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._check_value(text) IS
  'Private: runs a check''s query (one row of one numeric-castable column, or no row) and returns its value.';
REVOKE EXECUTE ON FUNCTION webhooks._check_value(text) FROM PUBLIC;
