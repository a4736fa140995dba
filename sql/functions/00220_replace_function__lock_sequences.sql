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
        WHERE p.oid = 'webhooks._lock_sequences(text, integer)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner), ''), true);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION webhooks._lock_sequences(text, integer);
-- begin sql/src/process/_lock_sequences.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._lock_sequences is _lock_pending() for process_pending(), which
-- runs what it locks one event after another in the order returned: it also
-- takes, behind the head of an ordered sequence (set_ordering()), the
-- events that wait behind that head, in sequence order, so one batch runs a
-- run of a sequence instead of one event of it. Without it every event of a
-- sequence costs a batch of its own, a settle and a second write (the next
-- event's order_held), and ordered processing ran at 0.1-0.3x of unordered.
--
-- The claimable events are read through a cursor, one at a time, so that
-- a head with followers uses the batch's room and the rest stays for other
-- workers. The runs behind the heads are found and locked together, by one
-- statement for all the heads fetched since the last one (the statement
-- _lock_run() runs for its one head; TestSQLSourcesPinSharedLogic keeps the
-- two equal): a statement per head cost about 70 us each, most of it the
-- statement's own, and 10,000 keys x 5 ran at 0.78x of unordered in the
-- bench. How many heads to fetch before the next run statement is learnt
-- as it goes: the first head may take all the room; after that each head
-- sets aside as much room as the heads before it took on average, so a
-- batch of heads with short runs costs two run statements, not one per
-- head, and a head whose run is cut by the budget only leaves its rest to
-- the next batch.
--
-- The caller must run what it returns in the order returned (each head,
-- then its run) and must not run an event after another of its sequence
-- failed in the same batch (process_pending() does both): that is what
-- keeps the sequence in order, because nothing else holds a run back. A
-- head whose provider is no longer ordered runs alone. process_pending()
-- calls it only while some provider is ordered (webhooks.ordering not
-- empty), and _lock_pending()'s one set-based pick otherwise.
--
-- Its statements keep generic plans (plan_cache_mode), as _lock_run()'s.
CREATE OR REPLACE FUNCTION webhooks._lock_sequences(worker text, max_events integer)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_paused     text[];
    v_budget     integer;          -- events that may still be locked
    v_room       integer;          -- of it, what no head fetched sets aside for its run
    v_cur        refcursor;
    v_id         bigint;
    v_provider   text;
    v_key        text;
    v_num        numeric;
    v_text       text;
    v_received   timestamptz;
    v_done       boolean := false; -- the cursor is exhausted
    -- What is locked, in the order it must run: the rows fetched (v_at = the
    -- fetch's number, v_sub = 0), each followed by its run (v_sub = 1, 2, ...).
    v_ids        bigint[] := '{}';
    v_at         integer[] := '{}';
    v_sub        integer[] := '{}';
    v_fetched    integer := 0;
    -- The heads fetched since the last run statement (v_h_at: their fetch).
    v_h_at       integer[] := '{}';
    v_h_id       bigint[] := '{}';
    v_h_provider text[] := '{}';
    v_h_key      text[] := '{}';
    v_h_num      numeric[] := '{}';
    v_h_text     text[] := '{}';
    v_h_received timestamptz[] := '{}';
    v_heads      integer := 0;     -- heads whose runs were looked for
    v_behind     integer := 0;     -- events locked behind them
    v_f          record;
    v_hn         integer;
    v_i          integer;
BEGIN
    PERFORM webhooks._require_text('worker', _lock_sequences.worker, 255);
    IF _lock_sequences.max_events IS NULL OR _lock_sequences.max_events < 1 OR _lock_sequences.max_events > 10000 THEN
        RAISE EXCEPTION 'pginbox: max_events must be between 1 and 10000, got %', _lock_sequences.max_events
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT coalesce(pg_catalog.array_agg(pp.provider), '{}') INTO v_paused FROM webhooks.paused_providers AS pp;

    v_budget := _lock_sequences.max_events;
    v_room := v_budget;
    -- The same pick as _lock_pending()'s, one row per FETCH: a row is
    -- locked only when fetched.
    OPEN v_cur NO SCROLL FOR
        SELECT e.id, e.provider, e.order_key, e.order_num, e.order_text, e.received_at
        FROM webhooks.inbox AS e
        WHERE e.status = 'pending'
          AND NOT e.order_held
          AND e.run_after <= now()
          AND e.attempts < e.max_attempts
          AND e.provider <> ALL (v_paused)
        ORDER BY e.run_after, e.id
        FOR UPDATE SKIP LOCKED;
    LOOP
        -- Fetch while some room is not set aside for the heads' runs.
        WHILE v_room > 0 LOOP
            FETCH v_cur INTO v_id, v_provider, v_key, v_num, v_text, v_received;
            IF NOT FOUND THEN
                v_done := true;
                EXIT;
            END IF;
            v_fetched := v_fetched + 1;
            v_ids := v_ids || v_id;
            v_at := v_at || v_fetched;
            v_sub := v_sub || 0;
            v_budget := v_budget - 1;
            v_room := v_room - 1;
            CONTINUE WHEN v_key IS NULL OR v_budget = 0;
            v_h_at := v_h_at || v_fetched;
            v_h_id := v_h_id || v_id;
            v_h_provider := v_h_provider || v_provider;
            v_h_key := v_h_key || v_key;
            v_h_num := v_h_num || v_num;
            v_h_text := v_h_text || v_text;
            v_h_received := v_h_received || v_received;
            v_room := v_room - CASE WHEN v_heads = 0 THEN v_room
                                    ELSE pg_catalog.ceil(v_behind::numeric / v_heads)::integer END;
        END LOOP;
        -- No head, or no room left behind the heads (they set none aside
        -- once runs came back empty).
        EXIT WHEN pg_catalog.cardinality(v_h_id) = 0 OR v_budget = 0;

        -- Behind each head (events_order_idx, in sequence order): its
        -- unfinished events, cut at the first that may not run now, the
        -- runs cut together at the budget (heads in fetch order), then
        -- locked (re-checked under the lock) in one statement; a head's run
        -- is what was locked before the first of it that could not be.
        v_hn := NULL;
        FOR v_f IN
            WITH h AS (
                SELECT x.at, x.id, x.provider, x.order_key, x.num, x.txt, x.received, o.dead_blocks
                FROM ROWS FROM (pg_catalog.unnest(v_h_at), pg_catalog.unnest(v_h_id), pg_catalog.unnest(v_h_provider),
                                pg_catalog.unnest(v_h_key), pg_catalog.unnest(v_h_num), pg_catalog.unnest(v_h_text),
                                pg_catalog.unnest(v_h_received)) AS x(at, id, provider, order_key, num, txt, received)
                JOIN webhooks.ordering AS o ON o.provider = x.provider
            ), c AS (
                SELECT h.at, h.order_key, r.id, r.status, r.good, r.rn
                FROM h
                CROSS JOIN LATERAL (
                    SELECT e.id, e.status,
                           (e.status = 'pending' AND e.order_held AND e.run_after <= now() AND e.attempts < e.max_attempts)
                           OR (e.status = 'dead' AND NOT h.dead_blocks) AS good,
                           row_number() OVER (ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C",
                                                       e.received_at, e.id) AS rn
                    FROM webhooks.inbox AS e
                    WHERE e.provider = h.provider
                      AND e.order_key = h.order_key
                      AND e.order_key IS NOT NULL
                      AND e.status <> 'processed'
                      AND (coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id)
                        > (coalesce(h.num, 'NaN'::numeric), coalesce(h.txt, '') COLLATE "C", h.received, h.id)
                    ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id
                    LIMIT v_budget + 16
                ) AS r
            ), run AS (
                SELECT r.at, r.order_key, r.id, row_number() OVER (PARTITION BY r.at ORDER BY r.rn) AS n
                FROM (SELECT c.at, c.order_key, c.id, c.status, c.rn,
                             bool_and(c.good) OVER (PARTITION BY c.at ORDER BY c.rn) AS ok
                      FROM c) AS r
                WHERE r.ok AND r.status = 'pending'
            ), cut AS (
                SELECT run.at, run.order_key, run.id, run.n, row_number() OVER (ORDER BY run.at, run.n) AS g
                FROM run
            )
            SELECT e.id, cut.at, cut.n
            FROM cut
            JOIN webhooks.inbox AS e ON e.id = cut.id
            WHERE cut.g <= v_budget
              AND e.status IS NOT DISTINCT FROM 'pending'
              AND e.order_held IS NOT DISTINCT FROM true
              AND e.order_key IS NOT DISTINCT FROM cut.order_key
            ORDER BY cut.at, cut.n
            FOR UPDATE OF e SKIP LOCKED
        LOOP
            IF v_f.at IS DISTINCT FROM v_hn THEN
                v_hn := v_f.at;
                v_i := 0;
            END IF;
            CONTINUE WHEN v_f.n <> v_i + 1;
            v_i := v_i + 1;
            v_ids := v_ids || v_f.id;
            v_at := v_at || v_f.at;
            v_sub := v_sub || v_i;
            v_budget := v_budget - 1;
            v_behind := v_behind + 1;
        END LOOP;
        v_heads := v_heads + pg_catalog.cardinality(v_h_id);
        v_h_at := '{}';
        v_h_id := '{}';
        v_h_provider := '{}';
        v_h_key := '{}';
        v_h_num := '{}';
        v_h_text := '{}';
        v_h_received := '{}';
        v_room := v_budget;
        EXIT WHEN v_done OR v_budget = 0;
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
    FROM ROWS FROM (pg_catalog.unnest(v_ids), pg_catalog.unnest(v_at), pg_catalog.unnest(v_sub)) AS x(id, at, sub)
    JOIN webhooks.inbox AS e ON e.id = x.id
    ORDER BY x.at, x.sub;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._lock_sequences(text, integer) IS
  'Private, for process_pending(): _lock_pending(), and behind the head of an ordered sequence the events '
  'waiting behind it, in sequence order, up to max_events in all; returned in the order they must run (each '
  'head, then its run). The caller runs them in that order and stops a sequence at its first failure in the batch.';
REVOKE EXECUTE ON FUNCTION webhooks._lock_sequences(text, integer) FROM PUBLIC;
-- end sql/src/process/_lock_sequences.sql
-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.regrant') <> '' THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION webhooks._lock_sequences(text, integer) TO ' || pg_catalog.current_setting('pginbox.regrant');
    END IF;
END;
$$;
-- +goose StatementEnd
