-- +goose StatementBegin
-- webhooks.postpone_expectation is what backfill does when the provider says
-- the job is not finished yet: the open expectation's deadline moves to
-- now() + base_delay * 2^checks (capped at max_delay) and checks goes up by
-- one, so a job that keeps running is asked about less and less often.
-- Returns the new deadline, or NULL when there is no open expectation (it was
-- met meanwhile, or never recorded): nothing to postpone.
CREATE OR REPLACE FUNCTION webhooks.postpone_expectation(
    provider    text,
    external_id text,
    base_delay  interval DEFAULT '1 minute',
    max_delay   interval DEFAULT '1 hour'
)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_deadline timestamptz;
BEGIN
    PERFORM webhooks._require_text('provider', postpone_expectation.provider, 64);
    PERFORM webhooks._require_text('external_id', postpone_expectation.external_id, 255);
    IF postpone_expectation.base_delay IS NULL OR postpone_expectation.base_delay <= interval '0' THEN
        RAISE EXCEPTION 'pginbox: base_delay must be a positive interval, got %', postpone_expectation.base_delay
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF postpone_expectation.max_delay IS NULL OR postpone_expectation.max_delay < postpone_expectation.base_delay THEN
        RAISE EXCEPTION 'pginbox: max_delay (%) must be at least base_delay (%)',
            postpone_expectation.max_delay, postpone_expectation.base_delay
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE webhooks.expectations AS x
    SET deadline = now() + least(postpone_expectation.max_delay,
                                 postpone_expectation.base_delay * power(2, least(x.checks, 30))),
        checks   = x.checks + 1
    WHERE x.provider = postpone_expectation.provider
      AND x.external_id = postpone_expectation.external_id
      AND x.met_at IS NULL
    RETURNING x.deadline INTO v_deadline;

    RETURN v_deadline;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.postpone_expectation(text, text, interval, interval) IS
  'Backfill found the job not finished yet: moves the open expectation''s deadline to '
  'now() + least(max_delay, base_delay * 2^checks) and increments checks. Returns the new deadline, or NULL '
  'when there is no open expectation for the id.';
REVOKE EXECUTE ON FUNCTION webhooks.postpone_expectation(text, text, interval, interval) FROM PUBLIC;
