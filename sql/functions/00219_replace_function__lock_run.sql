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
        WHERE p.oid = 'webhooks._lock_run(bigint, text, integer)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner), ''), true);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION webhooks._lock_run(bigint, text, integer);
-- begin sql/src/process/_lock_run.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._lock_run locks, for the calling transaction, the run of an
-- ordered sequence behind one of its events: the events that wait behind
-- it, in sequence order, that may run now. It returns them in that order as
-- _lock_pending() returns what it locks (status processing, locked_by
-- worker, attempts + 1, claimed_at now(), nothing written); nothing when the
-- event is not ordered, its provider no longer is, or nothing may run
-- behind it.
--
-- The run is the unfinished events of the sequence that sort after the
-- event, taken while each is pending, held (order_held; only the head of a
-- sequence is ever not held), due (run_after <= now()), below max_attempts
-- and not locked by another transaction; a dead one is stepped over when the
-- provider's dead_blocks is false and ends the run when it is true; anything
-- else ends the run. At most max_events + 16 are read (so a long stretch of
-- dead events passed over may shorten a run, never reorder it). They are
-- read, cut and locked (FOR UPDATE SKIP LOCKED, re-checked under the lock)
-- in one statement, and the run is what was locked before the first that
-- could not be. That statement is the one _lock_sequences() runs for the
-- heads it fetched, here with one head (TestSQLSourcesPinSharedLogic).
--
-- Nothing else holds a run back once it is locked: the caller must run it
-- in the order returned, after the event itself, and stop at the first
-- failure. _lock_sequences() (for process_pending()) and process_batch()
-- do.
--
-- Its statements keep generic plans (plan_cache_mode): process_batch()
-- calls it once per head, and the last statement, whose custom plan knows
-- the run's length, was otherwise planned again on every call — about
-- 0.1 ms a head, a fifth of the two-phase lease's time on 10,000 sequences
-- of 5 (TestLockRunKeepsItsPlans checks the plans it keeps).
CREATE OR REPLACE FUNCTION webhooks._lock_run(event_id bigint, worker text, max_events integer)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_id          bigint := _lock_run.event_id;
    v_budget      integer := _lock_run.max_events;
    v_provider    text;
    v_key         text;
    v_num         numeric;
    v_text        text;
    v_received    timestamptz;
    v_ids         bigint[] := '{}';
    v_h_at        integer[];
    v_h_id        bigint[];
    v_h_provider  text[];
    v_h_key       text[];
    v_h_num       numeric[];
    v_h_text      text[];
    v_h_received  timestamptz[];
    v_f           record;
    v_i           integer;
BEGIN
    IF v_budget IS NULL OR v_budget < 1 THEN
        RETURN;
    END IF;
    SELECT e.provider, e.order_key, e.order_num, e.order_text, e.received_at
    INTO v_provider, v_key, v_num, v_text, v_received
    FROM webhooks.inbox AS e WHERE e.id = v_id;
    IF v_key IS NULL THEN
        RETURN;
    END IF;

    -- _lock_sequences()' statement for its heads, with this one head:
    -- events_order_idx, in sequence order. It reads the provider's
    -- dead_blocks itself, and finds nothing when the provider is no longer
    -- ordered.
    v_h_at := ARRAY[1];
    v_h_id := ARRAY[v_id];
    v_h_provider := ARRAY[v_provider];
    v_h_key := ARRAY[v_key];
    v_h_num := ARRAY[v_num];
    v_h_text := ARRAY[v_text];
    v_h_received := ARRAY[v_received];
    v_i := 0;
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
        EXIT WHEN v_f.n <> v_i + 1;
        v_ids := v_ids || v_f.id;
        v_i := v_i + 1;
    END LOOP;

    RETURN QUERY
    SELECT e.id, e.provider, e.external_id, e.event_type,
           'processing'::text,              -- status
           e.payload, e.source, e.received_at, e.revision, e.updated_at,
           now(),                           -- claimed_at
           e.processed_at,
           e.attempts + 1,                  -- attempts
           e.max_attempts, e.run_after,
           _lock_run.worker,                -- locked_by
           e.locked_until, e.last_error, e.payload_pruned_at, e.seq, e.body_sha256,
           e.order_key, e.order_num, e.order_text, e.order_held, e.out_of_order,
           e.trace_parent, e.trace_link
    FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS x(id, n)
    JOIN webhooks.inbox AS e ON e.id = x.id
    ORDER BY x.n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._lock_run(bigint, text, integer) IS
  'Private: locks (FOR UPDATE SKIP LOCKED) up to max_events events waiting behind event_id in its ordered '
  'sequence that may run now and returns them in sequence order as _lock_pending() would (locked_by worker); '
  'the caller runs them in that order after event_id and stops at the first failure.';
REVOKE EXECUTE ON FUNCTION webhooks._lock_run(bigint, text, integer) FROM PUBLIC;
-- end sql/src/process/_lock_run.sql
-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.regrant') <> '' THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION webhooks._lock_run(bigint, text, integer) TO ' || pg_catalog.current_setting('pginbox.regrant');
    END IF;
END;
$$;
-- +goose StatementEnd
