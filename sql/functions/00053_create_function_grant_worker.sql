-- +goose Up
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
REVOKE EXECUTE ON FUNCTION webhooks.grant_worker(text) FROM PUBLIC;
