-- +goose Up
-- begin sql/src/watch/_check_value.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._check_value evaluates the query of one check now: see
-- webhooks._check_value_at, which it calls with now() as $1.
--
-- Whoever may write webhooks.checks may run SQL as whoever calls
-- run_checks(): grant it accordingly.
CREATE OR REPLACE FUNCTION webhooks._check_value(query text)
RETURNS numeric
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    RETURN webhooks._check_value_at(_check_value.query, now());
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._check_value(text) IS
  'Private: runs a check''s query (one row of one numeric-castable column, or no row) with $1 = now() and returns its value.';
REVOKE EXECUTE ON FUNCTION webhooks._check_value(text) FROM PUBLIC;
-- end sql/src/watch/_check_value.sql
