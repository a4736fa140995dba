-- +goose Up
-- begin sql/src/admin/grant_worker.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.grant_worker lets a role process events: claim, complete, fail,
-- heartbeat, release, leased_events and process_batch with its helpers
-- _order_settle_many and _lock_run (the two-phase lease),
-- and process_pending with its helpers _lock_pending, _lock_sequences,
-- _mark_processed and _fail_pending (the row lock as the lease), and reads
-- webhooks.ordering (the providers' ordering settings: process_pending()
-- looks whether any is ordered). A worker sees the payloads of the events it
-- claims or locks and nothing else; it cannot ingest or replay.
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
        webhooks.process_batch(regprocedure, text, bigint[], integer[]),
        webhooks._order_settle_many(text[], text[]),
        webhooks._lock_run(bigint, text, integer),
        webhooks.process_pending(regprocedure, text, integer),
        webhooks._lock_pending(text, integer),
        webhooks._lock_sequences(text, integer),
        webhooks._mark_processed(bigint[]),
        webhooks._fail_pending(bigint, text)
        TO %I', grant_worker.role);
    -- process_pending() reads whether any provider is ordered.
    EXECUTE format('GRANT SELECT ON webhooks.ordering TO %I', grant_worker.role);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.grant_worker(text) IS
  'Lets role call claim, complete, fail, heartbeat, release, leased_events and process_batch with '
  '_order_settle_many and _lock_run (the two-phase lease), and process_pending with _lock_pending, _lock_sequences, _mark_processed and _fail_pending (the row lock as the '
  'lease), and reads webhooks.ordering; it sees the payloads of what it claims or locks, and nothing else. Run as the owner of schema webhooks.';
REVOKE EXECUTE ON FUNCTION webhooks.grant_worker(text) FROM PUBLIC;

-- Roles granted before this migration get the new functions too.
-- +goose StatementBegin
DO $$
DECLARE
    v_role name;
BEGIN
    FOR v_role IN
        SELECT DISTINCT r.rolname
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE p.oid = 'webhooks.process_batch(regprocedure, text, bigint[], integer[])'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND r.rolname <> current_user
    LOOP
        PERFORM webhooks.grant_worker(v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
-- end sql/src/admin/grant_worker.sql
