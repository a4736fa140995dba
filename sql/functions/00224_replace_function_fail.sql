-- +goose Up
-- begin sql/src/process/fail.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.fail records a failed attempt, fenced like complete(). The event
-- goes back to pending with an exponential backoff (1 s, 2 s, 4 s ... capped at
-- one hour) scaled by a random jitter in [0.75, 1.25) so that a burst of
-- failures does not retry in lock-step; once attempts reaches max_attempts the
-- event is dead.
--
-- The fence is written IS NOT DISTINCT FROM for the reason given in
-- complete(): the planner then looks the id up in the primary key.
CREATE OR REPLACE FUNCTION webhooks.fail(event_id bigint, worker text, attempt integer, error text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_status  text;
    v_attempt integer;
    v_error   text;
BEGIN
    UPDATE webhooks.inbox AS e
    SET status       = CASE WHEN e.attempts >= e.max_attempts THEN 'dead' ELSE 'pending' END,
        run_after    = CASE WHEN e.attempts >= e.max_attempts THEN e.run_after
                            ELSE now() + least(interval '1 hour',
                                               interval '1 second' * power(2, least(e.attempts, 20) - 1))
                                       * (0.75 + random() * 0.5)
                       END,
        locked_by    = NULL,
        locked_until = NULL,
        last_error   = left(coalesce(nullif(btrim(fail.error), ''), 'unknown error'), 8192),
        updated_at   = now()
    WHERE e.id = fail.event_id
      AND e.status IS NOT DISTINCT FROM 'processing'
      AND e.locked_by = fail.worker
      AND e.attempts = fail.attempt
    RETURNING e.status, e.attempts, e.last_error INTO v_status, v_attempt, v_error;

    IF v_status IS NOT NULL THEN
        INSERT INTO webhooks.event_errors (event_id, attempt, error)
        VALUES (fail.event_id, v_attempt, v_error);
    END IF;
    RETURN v_status;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.fail(bigint, text, integer, text) IS
  'Records a failed attempt, fenced on (event_id, worker, attempt) like complete(). Returns the new status: '
  'pending (retried after an exponential backoff with jitter, 1 s doubling up to 1 h) or dead (attempts '
  'reached max_attempts). Returns NULL when the lease was lost (nothing changed). error is kept in '
  'last_error (first 8 KiB) and appended to webhooks.event_errors.';
REVOKE EXECUTE ON FUNCTION webhooks.fail(bigint, text, integer, text) FROM PUBLIC;
-- end sql/src/process/fail.sql
