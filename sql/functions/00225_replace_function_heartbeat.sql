-- +goose Up
-- begin sql/src/process/heartbeat.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.heartbeat extends a lease that a long handler still holds, fenced
-- like complete(): a worker that already lost the event gets false and should
-- stop working on it.
--
-- The fence is written IS NOT DISTINCT FROM for the reason given in
-- complete(): the planner then looks the id up in the primary key.
CREATE OR REPLACE FUNCTION webhooks.heartbeat(
    event_id bigint,
    worker   text,
    attempt  integer,
    extend   interval DEFAULT '5 minutes'
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF heartbeat.extend IS NULL OR heartbeat.extend <= interval '0' THEN
        RAISE EXCEPTION 'pginbox: extend must be a positive interval, got %', heartbeat.extend
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE webhooks.inbox AS e
    SET locked_until = now() + heartbeat.extend,
        updated_at   = now()
    WHERE e.id = heartbeat.event_id
      AND e.status IS NOT DISTINCT FROM 'processing'
      AND e.locked_by = heartbeat.worker
      AND e.attempts = heartbeat.attempt;

    RETURN FOUND;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.heartbeat(bigint, text, integer, interval) IS
  'Extends the lease of a claimed event to now() + extend, fenced on (event_id, worker, attempt). '
  'Returns false when the lease was lost: stop working on the event.';
REVOKE EXECUTE ON FUNCTION webhooks.heartbeat(bigint, text, integer, interval) FROM PUBLIC;
-- end sql/src/process/heartbeat.sql
