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
        WHERE p.oid = 'webhooks.claim(text, integer, interval)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner), ''), true);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION webhooks.claim(text, integer, interval);
-- begin sql/src/process/claim.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.claim hands out up to max_events claimable events to one worker.
--
-- Every eligibility condition sits inside the locking SELECT (a filter applied
-- after the LIMIT would starve the queue), and the picked ids are MATERIALIZED
-- so the planner cannot re-run the LIMIT subquery and lock more rows than
-- asked for. SKIP LOCKED lets any number of workers claim at once without
-- waiting on each other; the literal 'pending' and "NOT e.order_held" match
-- the partial index events_claimable_idx even in cached generic plans.
--
-- Ordered providers (set_ordering()): an event held behind an earlier one of
-- its sequence (order_held, kept by the triggers on webhooks.events) is never
-- picked, and is not even in the claim index, so a claim reads only events it
-- may hand out however many wait. At most one event of a sequence is
-- runnable at a time, so one claim never hands out two of one sequence.
--
-- Call it in a transaction of its own: the claim holds once that commits, and
-- the work happens outside it, fenced by (id, worker, attempts).
CREATE OR REPLACE FUNCTION webhooks.claim(
    worker     text,
    max_events integer  DEFAULT 50,
    lease      interval DEFAULT '5 minutes'
)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused text[];
BEGIN
    PERFORM webhooks._require_text('worker', claim.worker, 255);
    IF claim.max_events IS NULL OR claim.max_events < 1 OR claim.max_events > 10000 THEN
        RAISE EXCEPTION 'pginbox: max_events must be between 1 and 10000, got %', claim.max_events
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF claim.lease IS NULL OR claim.lease <= interval '0' THEN
        RAISE EXCEPTION 'pginbox: lease must be a positive interval, got %', claim.lease
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
        LIMIT claim.max_events
        FOR UPDATE SKIP LOCKED
    )
    UPDATE webhooks.inbox AS e
    SET status       = 'processing',
        locked_by    = claim.worker,
        locked_until = now() + claim.lease,
        claimed_at   = now(),
        attempts     = e.attempts + 1,
        updated_at   = now()
    FROM picked
    WHERE e.id = picked.id
    RETURNING e.*;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.claim(text, integer, interval) IS
  'Claims up to max_events (1..10000) pending events whose run_after <= now(), oldest first, with '
  'FOR UPDATE SKIP LOCKED, skipping providers paused with pause() and events held behind an earlier event of their '
  'sequence (set_ordering()): marks them processing, locked_by = worker, locked_until = now() + lease, '
  'attempts + 1, and returns them. Run it in its own transaction; pass (id, worker, attempts) to '
  'complete(), fail() or heartbeat().';
REVOKE EXECUTE ON FUNCTION webhooks.claim(text, integer, interval) FROM PUBLIC;
-- end sql/src/process/claim.sql
-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.regrant') <> '' THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION webhooks.claim(text, integer, interval) TO ' || pg_catalog.current_setting('pginbox.regrant');
    END IF;
END;
$$;
-- +goose StatementEnd
