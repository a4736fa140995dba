-- +goose Up
-- begin sql/src/process/release.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.release hands a claimed event back without running it, fenced like
-- complete(): a runner shutting down releases what it claimed but did not
-- start, so other workers pick it up at once instead of after the lease. The
-- attempt still counts (attempts is the fencing token and never goes back).
--
-- plpgsql, and the fence written IS NOT DISTINCT FROM, for the reasons given
-- in complete().
CREATE OR REPLACE FUNCTION webhooks.release(event_id bigint, worker text, attempt integer)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    UPDATE webhooks.inbox AS e
    SET status       = 'pending',
        run_after    = now(),
        locked_by    = NULL,
        locked_until = NULL,
        updated_at   = now()
    WHERE e.id = release.event_id
      AND e.status IS NOT DISTINCT FROM 'processing'
      AND e.locked_by = release.worker
      AND e.attempts = release.attempt;
    RETURN FOUND;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.release(bigint, text, integer) IS
  'Hands a claimed event back to pending (run now) without running it, fenced on (event_id, worker, attempt); '
  'the attempt still counts. Returns false when the lease was already lost.';
REVOKE EXECUTE ON FUNCTION webhooks.release(bigint, text, integer) FROM PUBLIC;
-- end sql/src/process/release.sql
