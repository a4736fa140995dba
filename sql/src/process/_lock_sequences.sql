-- +goose StatementBegin
-- webhooks._lock_sequences is _lock_pending() for process_pending(), which
-- runs what it locks one event after another in the order returned: it also
-- takes, right behind the head of an ordered sequence (set_ordering()), the
-- events that wait behind that head, in sequence order, so one batch runs a
-- run of a sequence instead of one event of it. Without it every event of a
-- sequence costs a batch of its own, a settle and a second write (the next
-- event's order_held), and ordered processing ran at 0.1-0.3x of unordered.
--
-- The events behind a head are _lock_run()'s, found with the same statement
-- written out here (with a call per head, process_pending() ran 10,000 keys
-- x 5 at 0.56x of unordered in the bench, written out at 0.71-0.90x;
-- TestSQLSourcesPinSharedLogic keeps the two equal). The caller must run
-- them in the order returned and must not run an event after another of
-- its sequence failed in the same batch (process_pending() does both): that
-- is what keeps the sequence in order, because nothing else holds them back.
--
-- The claimable events are read through a cursor, one at a time, so that a
-- head with followers uses the batch's room and the rest stays for other
-- workers. process_pending() calls it only while some provider is ordered
-- (webhooks.ordering not empty), and _lock_pending()'s one set-based pick
-- otherwise.
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
    v_provider    text;
    v_key         text;
    v_num         numeric;
    v_text        text;
    v_received    timestamptz;
    v_dead_blocks boolean;
    v_seen        text;     -- the provider v_dead_blocks is of
    v_f           record;
    v_i           integer;
BEGIN
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
        SELECT e.id, e.provider, e.order_key, e.order_num, e.order_text, e.received_at
        FROM webhooks.events AS e
        WHERE e.status = 'pending'
          AND NOT e.order_held
          AND e.run_after <= now()
          AND e.attempts < e.max_attempts
          AND e.provider <> ALL (v_paused)
        ORDER BY e.run_after, e.id
        FOR UPDATE SKIP LOCKED;
    WHILE v_budget > 0 LOOP
        FETCH v_cur INTO v_id, v_provider, v_key, v_num, v_text, v_received;
        EXIT WHEN NOT FOUND;
        v_ids := v_ids || v_id;
        v_budget := v_budget - 1;
        CONTINUE WHEN v_key IS NULL OR v_budget = 0;

        IF v_provider IS DISTINCT FROM v_seen THEN
            SELECT o.dead_blocks INTO v_dead_blocks FROM webhooks.ordering AS o WHERE o.provider = v_provider;
            v_seen := v_provider;
        END IF;
        CONTINUE WHEN v_dead_blocks IS NULL;

        -- The unfinished events behind the head, in sequence order
        -- (events_order_idx), cut at the first that may not run now, then
        -- locked (re-checked under the lock) in one statement; the run is
        -- what was locked before the first one that could not be.
        v_i := 0;
        FOR v_f IN
            WITH c AS (
                SELECT e.id, e.status,
                       (e.status = 'pending' AND e.order_held AND e.run_after <= now() AND e.attempts < e.max_attempts)
                       OR (e.status = 'dead' AND NOT v_dead_blocks) AS good,
                       row_number() OVER (ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C",
                                                   e.received_at, e.id) AS rn
                FROM webhooks.events AS e
                WHERE e.provider = v_provider
                  AND e.order_key = v_key
                  AND e.order_key IS NOT NULL
                  AND (e.status = 'processed') IS FALSE
                  AND (coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id)
                    > (coalesce(v_num, 'NaN'::numeric), coalesce(v_text, '') COLLATE "C", v_received, v_id)
                ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id
                LIMIT v_budget + 16
            ), run AS (
                SELECT r.id, row_number() OVER (ORDER BY r.rn) AS n
                FROM (SELECT c.id, c.status, c.rn, bool_and(c.good) OVER (ORDER BY c.rn) AS ok FROM c) AS r
                WHERE r.ok AND r.status = 'pending'
                ORDER BY r.rn
                LIMIT v_budget
            )
            SELECT e.id, run.n
            FROM run
            JOIN webhooks.events AS e ON e.id = run.id
            WHERE e.status IS NOT DISTINCT FROM 'pending'
              AND e.order_held IS NOT DISTINCT FROM true
              AND e.order_key IS NOT DISTINCT FROM v_key
            ORDER BY run.n
            FOR UPDATE OF e SKIP LOCKED
        LOOP
            EXIT WHEN v_f.n <> v_i + 1;
            v_ids := v_ids || v_f.id;
            v_i := v_i + 1;
        END LOOP;
        v_budget := v_budget - v_i;
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
