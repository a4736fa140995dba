-- +goose StatementBegin
-- webhooks._lock_sequences is _lock_pending() for process_pending(), which
-- runs what it locks one event after another in the order returned: it also
-- takes, right behind the head of an ordered sequence (set_ordering()), the
-- events that wait behind that head, in sequence order, so one batch runs a
-- run of a sequence instead of one event of it. Without it every event of a
-- sequence costs a batch of its own, a settle and a second write (the next
-- event's order_held), and ordered processing ran at 0.1-0.3x of unordered.
--
-- The events behind a head are _lock_run()'s. The caller must run them in
-- the order returned and must not run an event after another of its
-- sequence failed in the same batch (process_pending() does both): that is
-- what keeps the sequence in order, because nothing else holds them back.
--
-- The claimable events are read through a cursor, one at a time, so that a
-- head with followers uses the batch's room and the rest stays for other
-- workers. While no provider is ordered (webhooks.ordering is empty) it
-- returns _lock_pending()'s one set-based pick.
CREATE OR REPLACE FUNCTION webhooks._lock_sequences(worker text, max_events integer)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused      text[];
    v_ids         bigint[] := '{}';
    v_budget      integer;
    v_cur         refcursor;
    v_id          bigint;
    v_key         text;
    v_run         bigint[];
BEGIN
    IF NOT EXISTS (SELECT FROM webhooks.ordering) THEN
        RETURN QUERY SELECT * FROM webhooks._lock_pending(_lock_sequences.worker, _lock_sequences.max_events);
        RETURN;
    END IF;
    PERFORM webhooks._require_text('worker', _lock_sequences.worker, 255);
    IF _lock_sequences.max_events IS NULL OR _lock_sequences.max_events < 1 OR _lock_sequences.max_events > 10000 THEN
        RAISE EXCEPTION 'pginbox: max_events must be between 1 and 10000, got %', _lock_sequences.max_events
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT coalesce(pg_catalog.array_agg(pp.provider), '{}') INTO v_paused FROM webhooks.paused_providers AS pp;

    v_budget := _lock_sequences.max_events;
    -- The same pick as _lock_pending()'s, one row per FETCH: a row is
    -- locked only when fetched.
    OPEN v_cur NO SCROLL FOR
        SELECT e.id, e.order_key
        FROM webhooks.events AS e
        WHERE e.status = 'pending'
          AND NOT e.order_held
          AND e.run_after <= now()
          AND e.attempts < e.max_attempts
          AND e.provider <> ALL (v_paused)
        ORDER BY e.run_after, e.id
        FOR UPDATE SKIP LOCKED;
    WHILE v_budget > 0 LOOP
        FETCH v_cur INTO v_id, v_key;
        EXIT WHEN NOT FOUND;
        v_ids := v_ids || v_id;
        v_budget := v_budget - 1;
        CONTINUE WHEN v_key IS NULL OR v_budget = 0;

        v_run := ARRAY(SELECT r.id FROM webhooks._lock_run(v_id, _lock_sequences.worker, v_budget) AS r);
        v_ids := v_ids || v_run;
        v_budget := v_budget - pg_catalog.cardinality(v_run);
    END LOOP;
    CLOSE v_cur;

    RETURN QUERY
    SELECT e.id, e.provider, e.external_id, e.event_type,
           'processing'::text,              -- status
           e.payload, e.source, e.received_at, e.revision, e.updated_at,
           now(),                           -- claimed_at
           e.processed_at,
           e.attempts + 1,                  -- attempts
           e.max_attempts, e.run_after,
           _lock_sequences.worker,          -- locked_by
           e.locked_until, e.last_error, e.payload_pruned_at, e.seq, e.body_sha256,
           e.order_key, e.order_num, e.order_text, e.order_held, e.out_of_order,
           e.trace_parent, e.trace_link
    FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS x(id, n)
    JOIN webhooks.events AS e ON e.id = x.id
    ORDER BY x.n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._lock_sequences(text, integer) IS
  'Private, for process_pending(): _lock_pending(), and behind the head of an ordered sequence the events '
  'waiting behind it, in sequence order, up to max_events in all; returned in the order they must run. The '
  'caller runs them in that order and stops a sequence at its first failure in the batch.';
REVOKE EXECUTE ON FUNCTION webhooks._lock_sequences(text, integer) FROM PUBLIC;
