-- +goose Up
-- begin sql/src/process/complete.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.complete marks a claimed event processed, fenced on
-- (event_id, worker, attempt): a worker whose lease was rescued or re-claimed
-- gets false and must roll back, so its handler's writes (made in the same
-- transaction) vanish with it and the event's effects happen exactly once.
--
-- plpgsql rather than LANGUAGE sql: a sql function with a data-modifying CTE
-- is not inlined and is planned afresh on every call (about 150 us of server
-- CPU per event in the bench, against 60 us for the plpgsql body, whose plan
-- is cached per session). The fence compares status with IS NOT DISTINCT
-- FROM (status is NOT NULL, so it means the same as =) on purpose:
-- "status = 'processing'" proves the predicate of the partial index
-- events_leases_idx, and when the statistics were taken with nothing in
-- flight the planner costs that index as empty and scans every lease in
-- flight instead of looking the id up in the primary key (bench/REPORT.md).
-- tests/plans_test.go keeps it so.
CREATE OR REPLACE FUNCTION webhooks.complete(event_id bigint, worker text, attempt integer)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    UPDATE webhooks.inbox AS e
    SET status       = 'processed',
        processed_at = now(),
        locked_by    = NULL,
        locked_until = NULL,
        last_error   = NULL,
        updated_at   = now()
    WHERE e.id = complete.event_id
      AND e.status IS NOT DISTINCT FROM 'processing'
      AND e.locked_by = complete.worker
      AND e.attempts = complete.attempt;
    RETURN FOUND;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.complete(bigint, text, integer) IS
  'Marks the event processed only if it is still processing, locked by worker, at that attempt (fencing). '
  'Returns false when the lease was lost: roll back the handler''s writes. Run it in the same transaction '
  'as the handler''s own writes.';
REVOKE EXECUTE ON FUNCTION webhooks.complete(bigint, text, integer) FROM PUBLIC;
-- end sql/src/process/complete.sql
