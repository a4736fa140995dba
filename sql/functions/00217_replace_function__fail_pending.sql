-- +goose Up
-- begin sql/src/process/_fail_pending.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._fail_pending records a failed attempt of an event the calling
-- transaction locked with _lock_pending(): attempts + 1, back to pending
-- after the same backoff as fail(), or dead once attempts reaches
-- max_attempts; the failure is kept in webhooks.event_errors, as fail()
-- keeps it. Returns the new status, NULL when the event is not pending or
-- not locked by the calling transaction (see _mark_processed on xmax).
-- A failed event of an ordered sequence is its sequence's first unfinished
-- one (the head, or one of a run behind a head that just ran: _lock_run()),
-- so it is not held any more: retried in place, or, dead, blocking its
-- sequence or passed over per dead_blocks.
CREATE OR REPLACE FUNCTION webhooks._fail_pending(event_id bigint, error text)
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
    v_xid     xid := (pg_catalog.txid_current() % 4294967296)::text::xid;
BEGIN
    UPDATE webhooks.inbox AS e
    SET status       = CASE WHEN e.attempts + 1 >= e.max_attempts THEN 'dead' ELSE 'pending' END,
        run_after    = CASE WHEN e.attempts + 1 >= e.max_attempts THEN e.run_after
                            ELSE now() + least(interval '1 hour',
                                               interval '1 second' * power(2, least(e.attempts + 1, 20) - 1))
                                       * (0.75 + random() * 0.5)
                       END,
        attempts     = e.attempts + 1,
        claimed_at   = now(),
        order_held   = false,
        last_error   = left(coalesce(nullif(btrim(_fail_pending.error), ''), 'unknown error'), 8192),
        updated_at   = now()
    WHERE e.id = _fail_pending.event_id
      AND e.status IS NOT DISTINCT FROM 'pending'
      AND e.attempts < e.max_attempts
      AND e.xmax = v_xid
    RETURNING e.status, e.attempts, e.last_error INTO v_status, v_attempt, v_error;

    IF v_status IS NOT NULL THEN
        INSERT INTO webhooks.event_errors (event_id, attempt, error)
        VALUES (_fail_pending.event_id, v_attempt, v_error);
    END IF;
    RETURN v_status;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._fail_pending(bigint, text) IS
  'Records a failed attempt of a pending event locked by the calling transaction (_lock_pending()): '
  'attempts + 1, pending again after fail()''s backoff, or dead at max_attempts; error kept in last_error '
  '(first 8 KiB) and appended to webhooks.event_errors. Returns the new status, NULL when the event is not pending '
  'or not locked by the calling transaction.';
REVOKE EXECUTE ON FUNCTION webhooks._fail_pending(bigint, text) FROM PUBLIC;
-- end sql/src/process/_fail_pending.sql
