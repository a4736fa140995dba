-- +goose Up
-- Storage v2 renamed the table webhooks.events to webhooks.inbox, so this
-- function returned SETOF webhooks.inbox; it returns the rows of the view
-- webhooks.events again. A return type cannot be replaced: the function is
-- dropped and created, and the roles that could execute it can again.
-- +goose StatementBegin
DO $$
BEGIN
    PERFORM pg_catalog.set_config('pginbox.regrant', coalesce((
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ',')
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE p.oid = 'webhooks._lock_pending(text, integer)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner), ''), true);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION webhooks._lock_pending(text, integer);
-- begin sql/src/process/_lock_pending.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._lock_pending locks up to max_events claimable events for the
-- calling transaction (FOR UPDATE SKIP LOCKED) and returns them as a claim
-- would hand them out — status processing, locked_by worker, attempts + 1,
-- claimed_at now() — without writing anything: the row lock is the lease. It
-- lasts until the transaction ends; a worker that dies rolls back and its
-- events are simply pending again, with nothing to rescue. Every eligibility
-- condition sits inside the locking SELECT and the ids are MATERIALIZED, as
-- in claim(); providers paused with pause() are skipped the same way (read
-- into an array first, so the pick keeps its ordered scan of the claim
-- index), and so are events held behind an earlier event of their sequence
-- (order_held; set_ordering()): the row lock on the head of a sequence is
-- what keeps the rest of it waiting until this transaction ends. The row is built column by column, in webhooks.events' order: a
-- column added to the table must be added here too (the function then fails
-- with "structure of query does not match function result type" until it
-- is, which every processing test shows).
CREATE OR REPLACE FUNCTION webhooks._lock_pending(worker text, max_events integer)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused text[];
BEGIN
    PERFORM webhooks._require_text('worker', _lock_pending.worker, 255);
    IF _lock_pending.max_events IS NULL OR _lock_pending.max_events < 1 OR _lock_pending.max_events > 10000 THEN
        RAISE EXCEPTION 'pginbox: max_events must be between 1 and 10000, got %', _lock_pending.max_events
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT coalesce(pg_catalog.array_agg(pp.provider), '{}') INTO v_paused FROM webhooks.paused_providers AS pp;

    RETURN QUERY
    WITH picked AS MATERIALIZED (
        SELECT e.id
        FROM webhooks.inbox AS e
        WHERE e.status = 'pending'
          AND NOT e.order_held
          AND e.run_after <= now()
          AND e.attempts < e.max_attempts
          AND e.provider <> ALL (v_paused)
        ORDER BY e.run_after, e.id
        LIMIT _lock_pending.max_events
        FOR UPDATE SKIP LOCKED
    )
    SELECT e.id, e.provider, e.external_id, e.event_type,
           'processing'::text,              -- status
           e.payload, e.source, e.received_at, e.revision, e.updated_at,
           now(),                           -- claimed_at
           e.processed_at,
           e.attempts + 1,                  -- attempts
           e.max_attempts, e.run_after,
           _lock_pending.worker,            -- locked_by
           e.locked_until, e.last_error, e.payload_pruned_at, e.seq, e.body_sha256,
           e.order_key, e.order_num, e.order_text, e.order_held, e.out_of_order,
           e.trace_parent, e.trace_link
    FROM picked
    JOIN webhooks.inbox AS e ON e.id = picked.id
    ORDER BY e.run_after, e.id;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._lock_pending(text, integer) IS
  'Locks up to max_events (1..10000) pending events whose run_after <= now(), oldest first, FOR UPDATE SKIP '
  'LOCKED in the calling transaction, skipping providers paused with pause() and events held behind their sequence, and returns them as claim() would (status processing, locked_by = '
  'worker, attempts + 1, claimed_at now()) without writing them: the row lock is the lease, released by the '
  'transaction''s end. Finish them in the same transaction with _mark_processed() or _fail_pending().';
REVOKE EXECUTE ON FUNCTION webhooks._lock_pending(text, integer) FROM PUBLIC;
-- end sql/src/process/_lock_pending.sql
-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.regrant') <> '' THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION webhooks._lock_pending(text, integer) TO ' || pg_catalog.current_setting('pginbox.regrant');
    END IF;
END;
$$;
-- +goose StatementEnd
