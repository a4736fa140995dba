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
-- It never waits for a row lock (FOR UPDATE SKIP LOCKED). A row another
-- transaction still holds is typically the worker's own batch transaction
-- on a connection that broke and that the server has not ended yet (its
-- backend sits idle in transaction until idle_in_transaction_session_timeout
-- or TCP keepalive ends it): waiting for it would hold the worker, which
-- could then claim nothing, for as long. Such rows are left alone and
-- counted in held; once that transaction ends they are finished or still
-- this worker's, and a later call takes them back. A caller goes on working
-- while held > 0 and calls again a little later.
--
-- The fence is the worker's name alone: call it as that worker, and only
-- while it runs nothing under that name (pginbox's workers are named per
-- process incarnation and goroutine, host:pid:token/wN, and call it between
-- batches, before their next claim). Nothing checks who the caller is: any
-- role granted grant_worker can call it with any worker's name, as it can
-- call complete(), fail(), release() or heartbeat() with a known
-- (id, worker, attempt) — locked_by is readable, and the roles granted
-- grant_worker trust each other.
CREATE OR REPLACE FUNCTION webhooks.rescue_worker(worker text)
RETURNS TABLE (rescued integer, dead integer, held integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_rescued integer;
    v_dead    integer;
    v_held    integer;
BEGIN
    PERFORM webhooks._require_text('worker', rescue_worker.worker, 255);

    WITH free AS MATERIALIZED (
        SELECT e.id
        FROM webhooks.inbox AS e
        WHERE e.status = 'processing'
          AND e.locked_by = rescue_worker.worker
        ORDER BY e.id
        FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE webhooks.inbox AS e
        SET status       = CASE WHEN e.attempts >= e.max_attempts THEN 'dead' ELSE 'pending' END,
            run_after    = now(),
            last_error   = format('lease of %s given back by its worker, which lost track of it (attempt %s of %s)',
                                  e.locked_by, e.attempts, e.max_attempts),
            locked_by    = NULL,
            locked_until = NULL,
            updated_at   = now()
        FROM free
        WHERE e.id = free.id
          AND e.status = 'processing'
          AND e.locked_by = rescue_worker.worker
        RETURNING e.id, e.status, e.attempts, e.last_error
    ), logged AS (
        INSERT INTO webhooks.event_errors (event_id, attempt, error)
        SELECT moved.id, moved.attempts, moved.last_error FROM moved
    )
    SELECT count(*) FILTER (WHERE moved.status = 'pending')::integer,
           count(*) FILTER (WHERE moved.status = 'dead')::integer
    INTO v_rescued, v_dead
    FROM moved;

    -- A statement of its own, so it sees what the one above committed to
    -- this transaction: what is still processing under the name now is what
    -- another transaction held.
    SELECT count(*)::integer
    INTO v_held
    FROM webhooks.inbox AS e
    WHERE e.status = 'processing'
      AND e.locked_by = rescue_worker.worker;

    RETURN QUERY SELECT v_rescued, v_dead, v_held;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.rescue_worker(text) IS
  'Moves every event still processing under worker''s lease back to pending (or to dead at max_attempts) without '
  'waiting for the lease to expire, recording why in last_error and webhooks.event_errors; the attempt claim() counted '
  'still counts. Never waits for a row lock: rows another transaction holds (the worker''s own batch transaction on a '
  'broken connection) are skipped and counted in held; call again later while held > 0. Returns (rescued, dead, held). '
  'For a worker that lost track of its leases (a claim whose reply a broken connection lost): call it as that worker, '
  'while it runs nothing under that name. Nothing checks the caller: any role granted grant_worker may call it with any '
  'worker''s name (as it may complete() or fail() a known (id, worker, attempt)); such roles trust each other.';
REVOKE EXECUTE ON FUNCTION webhooks.rescue_worker(text) FROM PUBLIC;
-- end sql/src/process/rescue_worker.sql
