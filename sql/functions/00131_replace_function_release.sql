-- +goose Up
-- release, restated in plpgsql for the same reason as complete (00130).
-- The fence compares status with IS NOT DISTINCT FROM (status is NOT NULL,
-- so it means the same as =) on purpose: "status = 'processing'" proves the
-- predicate of the partial index events_leases_idx, and when the statistics
-- were taken with nothing in flight the planner costs that index as empty
-- and scans every lease in flight instead of looking the id up in the
-- primary key (bench/REPORT.md, section 3). tests/plans_test.go keeps it so.
-- +goose StatementBegin
-- webhooks.release hands a claimed event back without running it, fenced like
-- complete(): a runner shutting down releases what it claimed but did not
-- start, so other workers pick it up at once instead of after the lease. The
-- attempt still counts (attempts is the fencing token and never goes back).
CREATE OR REPLACE FUNCTION webhooks.release(event_id bigint, worker text, attempt integer)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    UPDATE webhooks.events AS e
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

-- +goose Down
-- +goose StatementBegin
-- webhooks.release hands a claimed event back without running it, fenced like
-- complete(): a runner shutting down releases what it claimed but did not
-- start, so other workers pick it up at once instead of after the lease. The
-- attempt still counts (attempts is the fencing token and never goes back).
CREATE OR REPLACE FUNCTION webhooks.release(event_id bigint, worker text, attempt integer)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
    WITH released AS (
        UPDATE webhooks.events AS e
        SET status       = 'pending',
            run_after    = now(),
            locked_by    = NULL,
            locked_until = NULL,
            updated_at   = now()
        WHERE e.id = release.event_id
          AND e.status = 'processing'
          AND e.locked_by = release.worker
          AND e.attempts = release.attempt
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM released);
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.release(bigint, text, integer) IS
  'Hands a claimed event back to pending (run now) without running it, fenced on (event_id, worker, attempt); '
  'the attempt still counts. Returns false when the lease was already lost.';
ALTER FUNCTION webhooks.release(bigint, text, integer) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
