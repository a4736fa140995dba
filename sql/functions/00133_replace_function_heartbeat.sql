-- +goose Up
-- heartbeat, restated with the fence of complete (00130).
-- The fence compares status with IS NOT DISTINCT FROM (status is NOT NULL,
-- so it means the same as =) on purpose: "status = 'processing'" proves the
-- predicate of the partial index events_leases_idx, and when the statistics
-- were taken with nothing in flight the planner costs that index as empty
-- and scans every lease in flight instead of looking the id up in the
-- primary key (bench/REPORT.md, section 3). tests/plans_test.go keeps it so.
-- +goose StatementBegin
-- webhooks.heartbeat extends a lease that a long handler still holds, fenced
-- like complete(): a worker that already lost the event gets false and should
-- stop working on it.
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

    UPDATE webhooks.events AS e
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

-- +goose Down
-- +goose StatementBegin
-- webhooks.heartbeat extends a lease that a long handler still holds, fenced
-- like complete(): a worker that already lost the event gets false and should
-- stop working on it.
CREATE OR REPLACE FUNCTION webhooks.heartbeat(
    event_id bigint,
    worker   text,
    attempt  integer,
    extend   interval DEFAULT '5 minutes'
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
BEGIN
    IF heartbeat.extend IS NULL OR heartbeat.extend <= interval '0' THEN
        RAISE EXCEPTION 'pginbox: extend must be a positive interval, got %', heartbeat.extend
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    UPDATE webhooks.events AS e
    SET locked_until = now() + heartbeat.extend,
        updated_at   = now()
    WHERE e.id = heartbeat.event_id
      AND e.status = 'processing'
      AND e.locked_by = heartbeat.worker
      AND e.attempts = heartbeat.attempt;

    RETURN FOUND;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.heartbeat(bigint, text, integer, interval) IS
  'Extends the lease of a claimed event to now() + extend, fenced on (event_id, worker, attempt). '
  'Returns false when the lease was lost: stop working on the event.';
ALTER FUNCTION webhooks.heartbeat(bigint, text, integer, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
