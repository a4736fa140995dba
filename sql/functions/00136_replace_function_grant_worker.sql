-- +goose Up
-- grant_worker, restated to include leased_events and process_batch (00134,
-- 00135), which a worker needs to run a sql: handler a batch at a time.
-- +goose StatementBegin
-- webhooks.grant_worker lets a role process events: claim, complete, fail,
-- heartbeat, release, leased_events and process_batch. A worker sees the
-- payloads of the events it claims (claim returns them) and nothing else; it
-- cannot ingest or replay.
CREATE OR REPLACE FUNCTION webhooks.grant_worker(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM webhooks._require_role(grant_worker.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_worker.role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION
        webhooks.claim(text, integer, interval),
        webhooks.complete(bigint, text, integer),
        webhooks.fail(bigint, text, integer, text),
        webhooks.heartbeat(bigint, text, integer, interval),
        webhooks.release(bigint, text, integer),
        webhooks.leased_events(text, bigint[], integer[]),
        webhooks.process_batch(regprocedure, text, bigint[], integer[])
        TO %I', grant_worker.role);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.grant_worker(text) IS
  'Lets role call claim, complete, fail, heartbeat, release, leased_events and process_batch (it sees the '
  'payloads of what it claims), and nothing else. Run as the owner of schema webhooks.';

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks.grant_worker(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM webhooks._require_role(grant_worker.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_worker.role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION
        webhooks.claim(text, integer, interval),
        webhooks.complete(bigint, text, integer),
        webhooks.fail(bigint, text, integer, text),
        webhooks.heartbeat(bigint, text, integer, interval),
        webhooks.release(bigint, text, integer)
        TO %I', grant_worker.role);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.grant_worker(text) IS
  'Lets role call claim, complete, fail, heartbeat and release (it sees the payloads of what it claims), and '
  'nothing else. Run as the owner of schema webhooks.';
