-- +goose Up
-- begin sql/src/watch/set_check_range.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.set_check_range pins a check to a fixed range: min_ok and max_ok
-- (NULL = unbounded) become its range and its range_mode becomes 'fixed', so
-- a learned check stops learning until set_check_mode(name, 'learned'). The
-- plain UPDATE of min_ok / max_ok still works; this says it in one call and
-- refuses an unknown name or an empty range instead of updating nothing.
--
-- SECURITY INVOKER: the caller needs UPDATE on webhooks.checks (the owner
-- has it; grant it with EXECUTE to an operator role if you want one).
CREATE OR REPLACE FUNCTION webhooks.set_check_range(name text, min_ok numeric, max_ok numeric)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    IF set_check_range.min_ok > set_check_range.max_ok THEN
        RAISE EXCEPTION 'pginbox: min_ok (%) is above max_ok (%) for check %',
            set_check_range.min_ok, set_check_range.max_ok, set_check_range.name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE webhooks.checks AS c
    SET min_ok = set_check_range.min_ok, max_ok = set_check_range.max_ok, range_mode = 'fixed'
    WHERE c.name = set_check_range.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pginbox: no check named %', coalesce(quote_literal(set_check_range.name), 'NULL')
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM webhooks.checks lists them.';
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.set_check_range(text, numeric, numeric) IS
  'Pins a check to the fixed range [min_ok, max_ok] (NULL = unbounded) and sets its range_mode to fixed. '
  'Raises 42704 for an unknown check, 22023 when min_ok > max_ok. Needs UPDATE on webhooks.checks.';
REVOKE EXECUTE ON FUNCTION webhooks.set_check_range(text, numeric, numeric) FROM PUBLIC;
-- end sql/src/watch/set_check_range.sql
