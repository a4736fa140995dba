-- +goose Up
-- begin sql/src/process/_mark_processed.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._mark_processed marks events the calling transaction locked with
-- _lock_pending() processed, in one statement: one row version per event
-- for its whole life in the queue (pending -> processed). It returns how
-- many it marked; the caller compares that with what it locked and raises
-- on a difference, so a handler's writes never commit without their event
-- marked. Only rows whose lock the calling transaction holds are marked: a
-- row locked FOR UPDATE carries its locker's transaction id as xmax, so
-- xmax = the caller's own id says the caller took the lease; a role granted
-- this function cannot mark an event it never locked (and so never ran).
CREATE OR REPLACE FUNCTION webhooks._mark_processed(event_ids bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n   integer;
    v_xid xid := (pg_catalog.txid_current() % 4294967296)::text::xid;
BEGIN
    UPDATE webhooks.events AS e
    SET status       = 'processed',
        processed_at = now(),
        claimed_at   = now(),
        attempts     = e.attempts + 1,
        last_error   = NULL,
        updated_at   = now()
    WHERE e.id = ANY (_mark_processed.event_ids)
      AND e.status IS NOT DISTINCT FROM 'pending'
      AND e.attempts < e.max_attempts
      AND e.xmax = v_xid;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._mark_processed(bigint[]) IS
  'Marks the pending events event_ids that the calling transaction locked with _lock_pending() (and no others) processed in '
  'one statement, counting the attempt; returns how many it marked. The caller raises when that differs '
  'from what it locked, so a handler''s writes never commit without their event.';
REVOKE EXECUTE ON FUNCTION webhooks._mark_processed(bigint[]) FROM PUBLIC;
-- end sql/src/process/_mark_processed.sql
