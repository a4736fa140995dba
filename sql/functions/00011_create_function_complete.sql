-- +goose Up
-- +goose StatementBegin
-- webhooks.complete marks a claimed event processed, fenced on
-- (event_id, worker, attempt): a worker whose lease was rescued or re-claimed
-- gets false and must roll back, so its handler's writes (made in the same
-- transaction) vanish with it and the event's effects happen exactly once.
CREATE OR REPLACE FUNCTION webhooks.complete(event_id bigint, worker text, attempt integer)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
    WITH done AS (
        UPDATE webhooks.events AS e
        SET status       = 'processed',
            processed_at = now(),
            locked_by    = NULL,
            locked_until = NULL,
            last_error   = NULL,
            updated_at   = now()
        WHERE e.id = complete.event_id
          AND e.status = 'processing'
          AND e.locked_by = complete.worker
          AND e.attempts = complete.attempt
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM done);
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.complete(bigint, text, integer) IS
  'Marks the event processed only if it is still processing, locked by worker, at that attempt (fencing). '
  'Returns false when the lease was lost: roll back the handler''s writes. Run it in the same transaction '
  'as the handler''s own writes.';

-- +goose Down
DROP FUNCTION webhooks.complete(bigint, text, integer);
