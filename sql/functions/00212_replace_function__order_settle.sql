-- +goose Up
-- begin sql/src/order/_order_settle.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_settle decides which event of one sequence may run next
-- and writes it to order_held: the head of the sequence (its first event,
-- in order, that is not processed; a dead one counts while dead_blocks) runs
-- when it is pending and no other event of the sequence is in flight; every
-- other pending event of the sequence is held. claim() and _lock_pending()
-- pick only events that are not held, through the claim index, so a claim
-- never reads the events waiting behind a head.
--
-- In flight means status processing (claim()), or a runnable pending event
-- that another transaction holds locked (_lock_pending(), the row-lock
-- lease): such a row cannot be locked here with SKIP LOCKED. A late event
-- that sorts before the one in flight therefore waits for it, and is marked
-- out_of_order when it runs.
--
-- Callers hold nothing on the sequence; this takes its lock first
-- (_order_lock), so each decision sees the previous one committed. Held
-- events are never locked by a claim, so promoting one waits for nobody who
-- could be waiting for this lock; demoting a runnable one skips it when it
-- is locked (it is in flight). Called by the triggers on webhooks.inbox,
-- by ingest_webhook() for an event that may overtake its sequence's head,
-- and by set_ordering(). Sets order_held only: no trigger fires again.
CREATE OR REPLACE FUNCTION webhooks._order_settle(provider text, order_key text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_dead_blocks boolean;
    v_busy        boolean;
    v_ready       bigint[];
    v_mine        bigint[];
    v_id          bigint;
    v_head_id     bigint;
    v_head_status text;
    v_target      bigint;
BEGIN
    IF _order_settle.provider IS NULL OR _order_settle.order_key IS NULL THEN
        RETURN;
    END IF;
    PERFORM webhooks._order_lock(_order_settle.provider, _order_settle.order_key);

    SELECT o.dead_blocks INTO v_dead_blocks
    FROM webhooks.ordering AS o
    WHERE o.provider = _order_settle.provider;
    IF v_dead_blocks IS NULL THEN
        -- No ordering (any more): nothing of this sequence waits.
        UPDATE webhooks.inbox AS e
        SET order_held = false
        WHERE e.provider = _order_settle.provider
          AND e.order_key = _order_settle.order_key
          AND e.order_key IS NOT NULL
          AND e.status <> 'processed'
          AND e.order_held
          AND e.status IS NOT DISTINCT FROM 'pending';
        RETURN;
    END IF;

    -- Both look-ups read events_order_idx. First the unfinished events of
    -- the sequence that are not held: in flight (processing), runnable
    -- (pending) or dead; a handful, however long the sequence.
    SELECT coalesce(bool_or(e.status = 'processing'), false),
           coalesce(array_agg(e.id) FILTER (WHERE e.status = 'pending'), '{}')
    INTO v_busy, v_ready
    FROM webhooks.inbox AS e
    WHERE e.provider = _order_settle.provider
      AND e.order_key = _order_settle.order_key
      AND e.order_key IS NOT NULL
      AND e.status <> 'processed'
      AND NOT e.order_held;
    -- Lock them one by one through the primary key (never a scan, even
    -- on a table without statistics yet). "IS NOT DISTINCT FROM" (status is
    -- NOT NULL, so it means "=") keeps the planner off the claim index,
    -- whose predicate "status = 'pending' AND NOT order_held" would prove.
    -- One that cannot be locked is in flight under a row-lock lease.
    v_mine := '{}';
    FOREACH v_id IN ARRAY v_ready LOOP
        PERFORM FROM webhooks.inbox AS e
        WHERE e.id = v_id
          AND e.status IS NOT DISTINCT FROM 'pending'
          AND e.order_held IS NOT DISTINCT FROM false
        FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            v_mine := v_mine || v_id;
        ELSE
            v_busy := true;
        END IF;
    END LOOP;

    -- The head: the first of the not-held ones (dead ones only while
    -- dead_blocks) and the first held one, whichever sorts first.
    SELECT h.id, h.status INTO v_head_id, v_head_status
    FROM (
        (SELECT e.id, e.status, coalesce(e.order_num, 'NaN'::numeric) AS n, coalesce(e.order_text, '') COLLATE "C" AS t,
                e.received_at, e.order_held
         FROM webhooks.inbox AS e
         WHERE e.provider = _order_settle.provider
           AND e.order_key = _order_settle.order_key
           AND e.order_key IS NOT NULL
           AND e.status <> 'processed'
           AND NOT e.order_held
           AND (e.status <> 'dead' OR v_dead_blocks)
         ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id
         LIMIT 1)
        UNION ALL
        (SELECT e.id, e.status, coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C",
                e.received_at, e.order_held
         FROM webhooks.inbox AS e
         WHERE e.provider = _order_settle.provider
           AND e.order_key = _order_settle.order_key
           AND e.order_key IS NOT NULL
           AND e.status <> 'processed'
           AND e.order_held
         ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id
         LIMIT 1)
    ) AS h
    ORDER BY h.n, h.t, h.received_at, h.id
    LIMIT 1;

    IF NOT v_busy AND v_head_status = 'pending' THEN
        v_target := v_head_id;
    END IF;

    IF pg_catalog.cardinality(v_mine) > 0 THEN
        UPDATE webhooks.inbox AS e
        SET order_held = true
        WHERE e.id = ANY (v_mine)
          AND e.id IS DISTINCT FROM v_target;
    END IF;
    IF v_target IS NOT NULL THEN
        UPDATE webhooks.inbox AS e
        SET order_held = false
        WHERE e.id = v_target
          AND e.order_key = _order_settle.order_key
          AND e.status IS NOT DISTINCT FROM 'pending'
          AND e.order_held;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_settle(text, text) IS
  'Private: under the sequence''s lock, lets exactly the head of sequence (provider, order_key) run (order_held '
  'false) when it is pending and nothing of the sequence is in flight, and holds every other pending event of it. '
  'Called by the triggers on webhooks.inbox, ingest_webhook() and set_ordering().';
REVOKE EXECUTE ON FUNCTION webhooks._order_settle(text, text) FROM PUBLIC;
-- end sql/src/order/_order_settle.sql
