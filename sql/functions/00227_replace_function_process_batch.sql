-- +goose Up
-- begin sql/src/process/process_batch.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.process_batch runs a SQL handler over a claimed batch in one
-- statement: for each event still leased to worker, the handler and
-- complete() run inside a BEGIN ... EXCEPTION block (a subtransaction), so
-- an event whose handler raises, or whose lease was lost, rolls back alone
-- and the others keep their effects. A failing event is recorded with fail()
-- (retried with backoff, dead at max_attempts). The caller's transaction —
-- normally the statement itself, in autocommit — commits every completed
-- event together with its handler's writes: exactly-once effects, with one
-- round trip per batch instead of four per event.
--
-- SECURITY INVOKER and no SET clause, deliberately: the handler runs with
-- the caller's rights and search_path, exactly as if the caller had called
-- it. What the caller needs is EXECUTE on leased_events, complete and fail
-- (grant_worker gives it) and whatever the handler itself needs.
--
-- Ordered sequences (set_ordering()): the settle that complete() and fail()
-- trigger for an ordered event stands aside (pginbox.order_bulk, set around
-- those calls only, never around the handler) and runs once for all the
-- batch's sequences at its end (_order_settle_many): nothing of the batch
-- is visible to other workers before its commit anyway. The caller needs
-- EXECUTE on _order_settle_many too (grant_worker gives it).
--
-- Behind each event of an ordered sequence that it processed, it also runs
-- the run of that sequence waiting behind it (_lock_run(): locked with the
-- row lock as the lease, as process_pending() does), in order, each in its
-- own subtransaction, up to as many events as the batch has; the first
-- failure stops the run (_fail_pending() counts its attempt) and the rest
-- stays pending and held. These events get rows of their own in the result
-- and are marked processed together at the end, so a handler sees the
-- earlier events of its run as run while their rows still read pending.
-- Without it each of them would wait for a claim of its own, one per batch
-- commit.
--
-- A query cancel (statement_timeout, a client cancel) is not caught: it
-- aborts the whole batch, which rolls back; the leases then expire and are
-- rescued, or the runner re-runs the batch event by event.
CREATE OR REPLACE FUNCTION webhooks.process_batch(
    handler   regprocedure,
    worker    text,
    event_ids bigint[],
    attempts  integer[]
)
RETURNS TABLE (event_id bigint, outcome text, error text, handler_ms double precision)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_fn     text;
    v_cast   text;
    v_sql    text;
    v_ev     webhooks.events;
    v_t0     timestamptz;
    v_status text;
    v_ok     boolean;
    v_ps     text[] := '{}';
    v_ks     text[] := '{}';
    v_room   integer;
    v_next   webhooks.events;
    v_done   bigint[] := '{}';
BEGIN
    -- A handler takes webhooks.events (the view's row), or webhooks.inbox: a
    -- handler created before storage v2 took the table, which was renamed.
    SELECT pg_catalog.format('%I.%I', n.nspname, p.proname),
           CASE WHEN p.proargtypes[0] = 'webhooks.inbox'::pg_catalog.regtype THEN '::webhooks.inbox' ELSE '' END
    INTO v_fn, v_cast
    FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE p.oid = process_batch.handler
      AND p.prokind = 'f'
      AND p.pronargs = 1
      AND p.proargtypes[0] IN ('webhooks.events'::pg_catalog.regtype, 'webhooks.inbox'::pg_catalog.regtype);
    IF v_fn IS NULL THEN
        RAISE EXCEPTION 'pginbox: handler % must be a function taking one webhooks.events argument',
            coalesce(process_batch.handler::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(process_batch.event_ids) > 10000 THEN
        RAISE EXCEPTION 'pginbox: at most 10000 events per batch, got %', pg_catalog.cardinality(process_batch.event_ids)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_sql := 'SELECT ' || v_fn || CASE WHEN v_cast = '' THEN '($1)' ELSE '(ROW(($1).*)' || v_cast || ')' END;
    v_room := coalesce(pg_catalog.cardinality(process_batch.event_ids), 0);

    FOR v_ev IN SELECT * FROM webhooks.leased_events(process_batch.worker, process_batch.event_ids, process_batch.attempts) LOOP
        v_t0 := pg_catalog.clock_timestamp();
        event_id := v_ev.id;
        BEGIN
            EXECUTE v_sql USING v_ev;
            PERFORM pg_catalog.set_config('pginbox.order_bulk', 'on', true);
            v_ok := webhooks.complete(v_ev.id, process_batch.worker, v_ev.attempts);
            PERFORM pg_catalog.set_config('pginbox.order_bulk', 'off', true);
            IF NOT v_ok THEN
                -- Lost between leased_events() and here: undo the handler.
                RAISE EXCEPTION 'pginbox: lease lost' USING ERRCODE = 'PX001';
            END IF;
            outcome := 'processed';
            error   := NULL;
        EXCEPTION
            WHEN SQLSTATE 'PX001' THEN
                outcome := 'lost';
                error   := NULL;
            WHEN OTHERS THEN
                error := pg_catalog.format('sql handler %s: ERROR: %s (SQLSTATE %s)', v_fn, SQLERRM, SQLSTATE);
                PERFORM pg_catalog.set_config('pginbox.order_bulk', 'on', true);
                v_status := webhooks.fail(v_ev.id, process_batch.worker, v_ev.attempts, error);
                PERFORM pg_catalog.set_config('pginbox.order_bulk', 'off', true);
                outcome := coalesce(v_status, 'lost');
        END;
        IF v_ev.order_key IS NOT NULL THEN
            v_ps := v_ps || v_ev.provider;
            v_ks := v_ks || v_ev.order_key;
        END IF;
        handler_ms := extract(epoch FROM pg_catalog.clock_timestamp() - v_t0) * 1000;
        RETURN NEXT;

        -- Behind an event of an ordered sequence that just ran: the run
        -- waiting behind it, locked (the row lock as the lease), in order,
        -- each in a subtransaction, up to the batch's size in all; the
        -- first failure stops it. Marked processed together at the end.
        CONTINUE WHEN outcome <> 'processed' OR v_ev.order_key IS NULL OR v_room <= 0;
        FOR v_next IN SELECT * FROM webhooks._lock_run(v_ev.id, process_batch.worker, v_room) LOOP
            v_room := v_room - 1;
            v_t0 := pg_catalog.clock_timestamp();
            event_id := v_next.id;
            BEGIN
                EXECUTE v_sql USING v_next;
                outcome := 'processed';
                error   := NULL;
            EXCEPTION
                WHEN OTHERS THEN
                    error   := pg_catalog.format('sql handler %s: ERROR: %s (SQLSTATE %s)', v_fn, SQLERRM, SQLSTATE);
                    outcome := webhooks._fail_pending(v_next.id, error);
                    IF outcome IS NULL THEN
                        RAISE EXCEPTION 'pginbox: locked event % could not be marked failed', v_next.id
                            USING ERRCODE = 'PX002';
                    END IF;
            END;
            handler_ms := extract(epoch FROM pg_catalog.clock_timestamp() - v_t0) * 1000;
            RETURN NEXT;
            EXIT WHEN outcome <> 'processed';
            v_done := v_done || v_next.id;
        END LOOP;
    END LOOP;
    IF pg_catalog.cardinality(v_done) > 0
       AND webhooks._mark_processed(v_done) <> pg_catalog.cardinality(v_done) THEN
        RAISE EXCEPTION 'pginbox: % locked events could not all be marked processed', pg_catalog.cardinality(v_done)
            USING ERRCODE = 'PX002';
    END IF;
    PERFORM webhooks._order_settle_many(v_ps, v_ks);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.process_batch(regprocedure, text, bigint[], integer[]) IS
  'Runs handler (a function taking one webhooks.events) on each event of a claimed batch still leased to '
  'worker at the given attempts, then complete(), each event in its own subtransaction; a handler error '
  'records fail() and rolls back that event alone. Behind each processed event of an ordered sequence it '
  'also runs, in order and up to the batch''s size in all, the events waiting behind it (locked, as '
  'process_pending does; the first failure stops them). Returns one row per event run: outcome processed, '
  'pending or dead (failed, see error), or lost (lease lost: its writes rolled back). Commit the calling '
  'transaction to keep the effects. Runs with the caller''s rights and search_path.';
REVOKE EXECUTE ON FUNCTION webhooks.process_batch(regprocedure, text, bigint[], integer[]) FROM PUBLIC;
-- end sql/src/process/process_batch.sql
