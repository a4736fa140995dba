-- +goose Up
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
-- index).
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
        FROM webhooks.events AS e
        WHERE e.status = 'pending'
          AND e.run_after <= now()
          AND e.attempts < e.max_attempts
          AND e.provider <> ALL (v_paused)
        ORDER BY e.run_after, e.id
        LIMIT _lock_pending.max_events
        FOR UPDATE SKIP LOCKED
    )
    SELECT (jsonb_populate_record(e, jsonb_build_object(
               'status', 'processing',
               'locked_by', _lock_pending.worker,
               'claimed_at', now(),
               'attempts', e.attempts + 1))).*
    FROM picked
    JOIN webhooks.events AS e ON e.id = picked.id
    ORDER BY e.run_after, e.id;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._lock_pending(text, integer) IS
  'Locks up to max_events (1..10000) pending events whose run_after <= now(), oldest first, FOR UPDATE SKIP '
  'LOCKED in the calling transaction, skipping providers paused with pause(), and returns them as claim() would (status processing, locked_by = '
  'worker, attempts + 1, claimed_at now()) without writing them: the row lock is the lease, released by the '
  'transaction''s end. Finish them in the same transaction with _mark_processed() or _fail_pending().';
REVOKE EXECUTE ON FUNCTION webhooks._lock_pending(text, integer) FROM PUBLIC;

-- +goose StatementBegin
-- webhooks._mark_processed marks events the calling transaction locked with
-- _lock_pending() processed, in one statement: one row version per event
-- for its whole life in the queue (pending -> processed). It returns how
-- many it marked; the caller compares that with what it locked and raises
-- on a difference, so a handler's writes never commit without their event
-- marked. Only rows whose lock the calling transaction holds are marked: a
-- row locked FOR UPDATE carries its locker's transaction id as xmax, so
-- xmax = the caller's own id says the caller took the lease; a role granted
-- this function cannot mark an event it never locked (and so never ran).
CREATE OR REPLACE FUNCTION webhooks._mark_processed(event_ids bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n   integer;
    v_xid xid := (pg_catalog.txid_current() % 4294967296)::text::xid;
BEGIN
    UPDATE webhooks.events AS e
    SET status       = 'processed',
        processed_at = now(),
        claimed_at   = now(),
        attempts     = e.attempts + 1,
        last_error   = NULL,
        updated_at   = now()
    WHERE e.id = ANY (_mark_processed.event_ids)
      AND e.status IS NOT DISTINCT FROM 'pending'
      AND e.attempts < e.max_attempts
      AND e.xmax = v_xid;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._mark_processed(bigint[]) IS
  'Marks the pending events event_ids that the calling transaction locked with _lock_pending() (and no others) processed in '
  'one statement, counting the attempt; returns how many it marked. The caller raises when that differs '
  'from what it locked, so a handler''s writes never commit without their event.';
REVOKE EXECUTE ON FUNCTION webhooks._mark_processed(bigint[]) FROM PUBLIC;

-- +goose StatementBegin
-- webhooks._fail_pending records a failed attempt of an event the calling
-- transaction locked with _lock_pending(): attempts + 1, back to pending
-- after the same backoff as fail(), or dead once attempts reaches
-- max_attempts; the failure is kept in webhooks.event_errors, as fail()
-- keeps it. Returns the new status, NULL when the event is not pending or
-- not locked by the calling transaction (see _mark_processed on xmax).
CREATE OR REPLACE FUNCTION webhooks._fail_pending(event_id bigint, error text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_status  text;
    v_attempt integer;
    v_error   text;
    v_xid     xid := (pg_catalog.txid_current() % 4294967296)::text::xid;
BEGIN
    UPDATE webhooks.events AS e
    SET status       = CASE WHEN e.attempts + 1 >= e.max_attempts THEN 'dead' ELSE 'pending' END,
        run_after    = CASE WHEN e.attempts + 1 >= e.max_attempts THEN e.run_after
                            ELSE now() + least(interval '1 hour',
                                               interval '1 second' * power(2, least(e.attempts + 1, 20) - 1))
                                       * (0.75 + random() * 0.5)
                       END,
        attempts     = e.attempts + 1,
        claimed_at   = now(),
        last_error   = left(coalesce(nullif(btrim(_fail_pending.error), ''), 'unknown error'), 8192),
        updated_at   = now()
    WHERE e.id = _fail_pending.event_id
      AND e.status IS NOT DISTINCT FROM 'pending'
      AND e.attempts < e.max_attempts
      AND e.xmax = v_xid
    RETURNING e.status, e.attempts, e.last_error INTO v_status, v_attempt, v_error;

    IF v_status IS NOT NULL THEN
        INSERT INTO webhooks.event_errors (event_id, attempt, error)
        VALUES (_fail_pending.event_id, v_attempt, v_error);
    END IF;
    RETURN v_status;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._fail_pending(bigint, text) IS
  'Records a failed attempt of a pending event locked by the calling transaction (_lock_pending()): '
  'attempts + 1, pending again after fail()''s backoff, or dead at max_attempts; error kept in last_error '
  '(first 8 KiB) and appended to webhooks.event_errors. Returns the new status, NULL when the event is not pending '
  'or not locked by the calling transaction.';
REVOKE EXECUTE ON FUNCTION webhooks._fail_pending(bigint, text) FROM PUBLIC;

-- +goose StatementBegin
-- webhooks.process_pending runs a SQL handler over a batch of pending events
-- in the calling transaction, with the row lock as the lease: lock up to
-- max_events with FOR UPDATE SKIP LOCKED, run the handler on all of them,
-- mark them processed with one UPDATE, and let the caller commit. One row
-- version per event instead of a claim and a completion, and nothing to
-- rescue when the worker dies (its transaction rolls back, the events are
-- pending again, their attempts not counted).
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
    v_evs    webhooks.events[];
    v_ids    bigint[];
    v_ev     webhooks.events;
    v_n      integer;
    v_failed boolean := false;
BEGIN
    SELECT pg_catalog.format('%I.%I', n.nspname, p.proname)
    INTO v_fn
    FROM pg_catalog.pg_proc AS p
    JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
    WHERE p.oid = process_pending.handler
      AND p.prokind = 'f'
      AND p.pronargs = 1
      AND p.proargtypes[0] = 'webhooks.events'::pg_catalog.regtype;
    IF v_fn IS NULL THEN
        RAISE EXCEPTION 'pginbox: handler % must be a function taking one webhooks.events argument',
            coalesce(process_pending.handler::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Locked outside the subtransaction below, so rolling it back keeps them.
    v_evs := ARRAY(SELECT e FROM webhooks._lock_pending(process_pending.worker, process_pending.max_events) AS e);
    v_n := pg_catalog.cardinality(v_evs);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_ids := ARRAY(SELECT x.id FROM pg_catalog.unnest(v_evs) AS x);

    BEGIN
        EXECUTE 'SELECT ' || v_fn || '(x) FROM pg_catalog.unnest($1) AS x' USING v_evs;
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

    -- A handler raised: event by event, each in its own subtransaction.
    FOREACH v_ev IN ARRAY v_evs LOOP
        event_id := v_ev.id;
        attempt  := v_ev.attempts;
        BEGIN
            EXECUTE 'SELECT ' || v_fn || '($1)' USING v_ev;
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
  'SKIP LOCKED in the calling transaction (the row lock is the lease: nothing written until the end), then '
  'marks them processed with one UPDATE; commit the transaction to keep the effects. When a handler raises, '
  'the batch runs again event by event in subtransactions and a failing event is retried with backoff, '
  'dead at max_attempts. Returns one row per event: outcome processed, pending or dead (see error), and the '
  'attempt counted. A cancel or crash rolls everything back without counting attempts. Runs with the '
  'caller''s rights and search_path.';
REVOKE EXECUTE ON FUNCTION webhooks.process_pending(regprocedure, text, integer) FROM PUBLIC;
