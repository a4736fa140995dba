-- +goose Up
-- begin sql/src/process/process_pending.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.process_pending runs a SQL handler over a batch of pending events
-- in the calling transaction, with the row lock as the lease: lock up to
-- max_events with FOR UPDATE SKIP LOCKED, run the handler on all of them,
-- mark them processed with one UPDATE, and let the caller commit. One row
-- version per event instead of a claim and a completion, and nothing to
-- rescue when the worker dies (its transaction rolls back, the events are
-- pending again, their attempts not counted).
--
-- Ordered sequences (set_ordering()): the batch may hold a run of one
-- sequence, head first (_lock_sequences()); the events run in the order
-- locked, and once an event fails, the events behind it in its sequence in
-- this batch are not run (nor returned): they stay pending and held.
--
-- Optimistic: the whole batch runs in one subtransaction. Only when a
-- handler raises does it roll that back and run the batch again event by
-- event, each in its own subtransaction: a failing event is recorded with
-- _fail_pending() (attempts + 1, retried with backoff, dead at max_attempts)
-- and the others keep their effects.
--
-- What it cannot catch — a query cancel (statement_timeout), a backend that
-- dies — aborts the whole transaction and counts no attempt; a caller must
-- then run the events with the two-phase lease (claim(), process_batch()),
-- which counts every attempt, so an event that kills its transaction every
-- time still reaches dead. The runner does so.
--
-- SECURITY INVOKER and no SET clause, deliberately: the handler runs with
-- the caller's rights and search_path, exactly as with process_batch().
CREATE OR REPLACE FUNCTION webhooks.process_pending(
    handler    regprocedure,
    worker     text,
    max_events integer DEFAULT 100
)
RETURNS TABLE (event_id bigint, outcome text, error text, attempt integer)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_fn     text;
    v_cast   text;
    v_evs    webhooks.events[];
    v_ids    bigint[];
    v_ev     webhooks.events;
    v_n      integer;
    v_failed boolean := false;
    v_stuck  text[] := '{}';
BEGIN
    -- A handler takes webhooks.events (the view's row), or webhooks.inbox: a
    -- handler created before storage v2 took the table, which was renamed.
    SELECT pg_catalog.format('%I.%I', n.nspname, p.proname),
           CASE WHEN p.proargtypes[0] = 'webhooks.inbox'::pg_catalog.regtype THEN '::webhooks.inbox' ELSE '' END
    INTO v_fn, v_cast
    FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE p.oid = process_pending.handler
      AND p.prokind = 'f'
      AND p.pronargs = 1
      AND p.proargtypes[0] IN ('webhooks.events'::pg_catalog.regtype, 'webhooks.inbox'::pg_catalog.regtype);
    IF v_fn IS NULL THEN
        RAISE EXCEPTION 'pginbox: handler % must be a function taking one webhooks.events argument',
            coalesce(process_pending.handler::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Locked outside the subtransaction below, so rolling it back keeps them.
    -- _lock_sequences() only while some provider is ordered: otherwise
    -- _lock_pending()'s one set-based pick, called directly.
    IF EXISTS (SELECT FROM webhooks.ordering) THEN
        v_evs := ARRAY(SELECT e FROM webhooks._lock_sequences(process_pending.worker, process_pending.max_events) AS e);
    ELSE
        v_evs := ARRAY(SELECT e FROM webhooks._lock_pending(process_pending.worker, process_pending.max_events) AS e);
    END IF;
    v_n := pg_catalog.cardinality(v_evs);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_ids := ARRAY(SELECT x.id FROM pg_catalog.unnest(v_evs) AS x);

    BEGIN
        EXECUTE 'SELECT ' || v_fn || CASE WHEN v_cast = '' THEN '(x)' ELSE '(ROW(x.*)' || v_cast || ')' END
                || ' FROM pg_catalog.unnest($1) AS x' USING v_evs;
        IF webhooks._mark_processed(v_ids) <> v_n THEN
            RAISE EXCEPTION 'pginbox: % locked events could not all be marked processed', v_n
                USING ERRCODE = 'PX002';
        END IF;
    EXCEPTION
        WHEN SQLSTATE 'PX002' THEN
            RAISE;
        WHEN OTHERS THEN
            v_failed := true;
    END;

    IF NOT v_failed THEN
        RETURN QUERY SELECT x.id, 'processed'::text, NULL::text, x.attempts FROM pg_catalog.unnest(v_evs) AS x;
        RETURN;
    END IF;

    -- A handler raised: event by event, each in its own subtransaction; a
    -- sequence stops at its first failure.
    FOREACH v_ev IN ARRAY v_evs LOOP
        CONTINUE WHEN v_ev.order_key IS NOT NULL
                  AND v_ev.provider || chr(31) || v_ev.order_key = ANY (v_stuck);
        event_id := v_ev.id;
        attempt  := v_ev.attempts;
        BEGIN
            EXECUTE 'SELECT ' || v_fn || CASE WHEN v_cast = '' THEN '($1)' ELSE '(ROW(($1).*)' || v_cast || ')' END USING v_ev;
            IF webhooks._mark_processed(ARRAY[v_ev.id]) <> 1 THEN
                RAISE EXCEPTION 'pginbox: locked event % could not be marked processed', v_ev.id
                    USING ERRCODE = 'PX002';
            END IF;
            outcome := 'processed';
            error   := NULL;
        EXCEPTION
            WHEN SQLSTATE 'PX002' THEN
                RAISE;
            WHEN OTHERS THEN
                error   := pg_catalog.format('sql handler %s: ERROR: %s (SQLSTATE %s)', v_fn, SQLERRM, SQLSTATE);
                outcome := webhooks._fail_pending(v_ev.id, error);
                IF v_ev.order_key IS NOT NULL THEN
                    v_stuck := v_stuck || (v_ev.provider || chr(31) || v_ev.order_key);
                END IF;
                IF outcome IS NULL THEN
                    RAISE EXCEPTION 'pginbox: locked event % could not be marked failed', v_ev.id
                        USING ERRCODE = 'PX002';
                END IF;
        END;
        RETURN NEXT;
    END LOOP;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.process_pending(regprocedure, text, integer) IS
  'Runs handler (a function taking one webhooks.events) on up to max_events pending events locked FOR UPDATE '
  'SKIP LOCKED in the calling transaction (the row lock is the lease: nothing written until the end; behind '
  'the head of an ordered sequence, the events waiting behind it, run in sequence order), then '
  'marks them processed with one UPDATE; commit the transaction to keep the effects. When a handler raises, '
  'the batch runs again event by event in subtransactions and a failing event is retried with backoff, '
  'dead at max_attempts. Returns one row per event: outcome processed, pending or dead (see error), and the '
  'attempt counted. A cancel or crash rolls everything back without counting attempts. Runs with the '
  'caller''s rights and search_path.';
REVOKE EXECUTE ON FUNCTION webhooks.process_pending(regprocedure, text, integer) FROM PUBLIC;
-- end sql/src/process/process_pending.sql
