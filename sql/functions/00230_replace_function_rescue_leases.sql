-- +goose Up
-- begin sql/src/process/rescue_leases.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.rescue_leases hands expired leases back: an event whose worker
-- stopped renewing its lease (crashed, hung, partitioned) goes back to
-- pending, or to dead once it has used all its attempts. Its old worker can
-- no longer complete it: the fencing check in complete() sees the change.
-- One bounded batch per call (FOR UPDATE SKIP LOCKED), so it never holds many
-- locks for long; reconcile() calls it in a loop.
CREATE OR REPLACE FUNCTION webhooks.rescue_leases(max_rows integer DEFAULT 1000)
RETURNS TABLE (rescued integer, dead integer)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF rescue_leases.max_rows IS NULL OR rescue_leases.max_rows < 1 THEN
        RAISE EXCEPTION 'pginbox: max_rows must be positive, got %', rescue_leases.max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    WITH expired AS MATERIALIZED (
        SELECT e.id
        FROM webhooks.inbox AS e
        WHERE e.status = 'processing'
          AND e.locked_until < now()
        ORDER BY e.locked_until
        LIMIT rescue_leases.max_rows
        FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE webhooks.inbox AS e
        SET status       = CASE WHEN e.attempts >= e.max_attempts THEN 'dead' ELSE 'pending' END,
            run_after    = now(),
            last_error   = format('lease of %s expired at %s (attempt %s of %s)',
                                  e.locked_by, e.locked_until, e.attempts, e.max_attempts),
            locked_by    = NULL,
            locked_until = NULL,
            updated_at   = now()
        FROM expired
        WHERE e.id = expired.id
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

COMMENT ON FUNCTION webhooks.rescue_leases(integer) IS
  'Moves up to max_rows events whose lease expired back to pending (or to dead at max_attempts), '
  'recording why in last_error and webhooks.event_errors; returns how many were rescued and how many died. The old worker''s '
  'complete() then returns false.';
REVOKE EXECUTE ON FUNCTION webhooks.rescue_leases(integer) FROM PUBLIC;
-- end sql/src/process/rescue_leases.sql
