-- +goose Up
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

-- +goose Down
DROP FUNCTION webhooks.release(bigint, text, integer);
