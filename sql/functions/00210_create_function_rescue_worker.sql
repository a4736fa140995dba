-- +goose Up
-- begin sql/src/process/rescue_worker.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.rescue_worker hands back, before their lease expires, the events
-- that one worker still holds under its own name: for a worker that lost
-- track of what it holds — a claim() that committed while the connection
-- lost its reply, an outcome it could not record. Each such event goes back
-- to pending, or to dead once it has used all its attempts, exactly as if
-- its lease had expired (rescue_leases()), only without the wait: the
-- attempt that claim() counted still counts (attempts is the fencing token
-- and never goes back), the reason is kept in last_error and
-- webhooks.event_errors, and the worker's own complete() or heartbeat() on
-- those events then returns false.
--
-- The fence is the worker's name alone, so only the worker itself may call
-- it, and only while it runs nothing under that name: pginbox's workers are
-- named per process incarnation and goroutine (host:pid:token/wN) and call it
-- between batches, before their next claim. Rows another transaction still
-- holds (the worker's own transaction on a connection that broke, not yet
-- ended by the server) are waited for, not skipped: once that transaction
-- ends they are either finished or still this worker's, and taken back.
CREATE OR REPLACE FUNCTION webhooks.rescue_worker(worker text)
RETURNS TABLE (rescued integer, dead integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM webhooks._require_text('worker', rescue_worker.worker, 255);

    RETURN QUERY
    WITH held AS MATERIALIZED (
        SELECT e.id
        FROM webhooks.events AS e
        WHERE e.status = 'processing'
          AND e.locked_by = rescue_worker.worker
        ORDER BY e.id
        FOR UPDATE
    ), moved AS (
        UPDATE webhooks.events AS e
        SET status       = CASE WHEN e.attempts >= e.max_attempts THEN 'dead' ELSE 'pending' END,
            run_after    = now(),
            last_error   = format('lease of %s given back by its worker, which lost track of it (attempt %s of %s)',
                                  e.locked_by, e.attempts, e.max_attempts),
            locked_by    = NULL,
            locked_until = NULL,
            updated_at   = now()
        FROM held
        WHERE e.id = held.id
          AND e.status = 'processing'
          AND e.locked_by = rescue_worker.worker
        RETURNING e.id, e.status, e.attempts, e.last_error
    ), logged AS (
        INSERT INTO webhooks.event_errors (event_id, attempt, error)
        SELECT moved.id, moved.attempts, moved.last_error FROM moved
    )
    SELECT count(*) FILTER (WHERE moved.status = 'pending')::integer,
           count(*) FILTER (WHERE moved.status = 'dead')::integer
    FROM moved;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.rescue_worker(text) IS
  'Moves every event still processing under worker''s lease back to pending (or to dead at max_attempts) without '
  'waiting for the lease to expire, recording why in last_error and webhooks.event_errors, and returns how many were '
  'rescued and how many died; the attempt claim() counted still counts. For a worker that lost track of its leases (a '
  'claim whose reply a broken connection lost): call it as that worker, while it runs nothing under that name.';
REVOKE EXECUTE ON FUNCTION webhooks.rescue_worker(text) FROM PUBLIC;
-- end sql/src/process/rescue_worker.sql
