-- +goose Up
-- begin sql/src/order/_order_settle_many.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_settle_many is _order_settle() for every sequence a batch
-- touched, in a few set-based statements instead of several per sequence:
-- what _mark_processed() and process_batch() call once a batch's events are
-- processed (or failed), with the sequences' keys.
--
-- It takes the sequences' locks in one order (provider, key), as every
-- settle does. Then the common case is decided for all of them at once: a
-- sequence whose unfinished events are all held (nothing in flight,
-- runnable or dead and passed over) lets its first one run. That is the
-- decision _order_settle() comes to for such a sequence. Every other
-- sequence (one with an event in flight, a runnable or a dead one, a late
-- arrival that sorts first, or a provider no longer ordered) goes through
-- _order_settle() itself.
CREATE OR REPLACE FUNCTION webhooks._order_settle_many(providers text[], order_keys text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ps   text[];
    v_ks   text[];
    v_slow record;
BEGIN
    IF coalesce(pg_catalog.cardinality(_order_settle_many.order_keys), 0) = 0 THEN
        RETURN;
    END IF;
    IF pg_catalog.cardinality(_order_settle_many.providers) IS DISTINCT FROM pg_catalog.cardinality(_order_settle_many.order_keys) THEN
        RAISE EXCEPTION 'pginbox: % providers for % order keys', pg_catalog.cardinality(_order_settle_many.providers),
            pg_catalog.cardinality(_order_settle_many.order_keys)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT pg_catalog.array_agg(d.p ORDER BY d.p, d.k), pg_catalog.array_agg(d.k ORDER BY d.p, d.k)
    INTO v_ps, v_ks
    FROM (SELECT DISTINCT u.p, u.k
          FROM ROWS FROM (pg_catalog.unnest(_order_settle_many.providers), pg_catalog.unnest(_order_settle_many.order_keys)) AS u(p, k)
          WHERE u.p IS NOT NULL AND u.k IS NOT NULL) AS d;
    IF v_ks IS NULL THEN
        RETURN;
    END IF;
    PERFORM webhooks._order_lock(x.p, x.k) FROM ROWS FROM (pg_catalog.unnest(v_ps), pg_catalog.unnest(v_ks)) AS x(p, k);

    -- Each sequence: whether the common case holds and, if so, its first
    -- unfinished event, both from one probe — the sequence's first
    -- unfinished event in the index's order (events_order_idx: order_held
    -- before the order), an unheld one if there is any, else its first held
    -- one. Then the release, in the same statement; the sequences left over
    -- after it.
    FOR v_slow IN
        WITH s AS (
            SELECT x.p, x.k,
                   o.provider IS NOT NULL AND f.order_held IS NOT FALSE AS fast,
                   CASE WHEN f.order_held THEN f.id END AS first_id
            FROM ROWS FROM (pg_catalog.unnest(v_ps), pg_catalog.unnest(v_ks)) AS x(p, k)
            LEFT JOIN webhooks.ordering AS o ON o.provider = x.p
            LEFT JOIN LATERAL (
                SELECT e.id, e.order_held
                FROM webhooks.inbox AS e
                WHERE e.provider = x.p AND e.order_key = x.k AND e.order_key IS NOT NULL
                  AND e.status <> 'processed'
                ORDER BY e.order_held, coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C",
                         e.received_at, e.id
                LIMIT 1
            ) AS f ON true
        ), released AS (
            -- "IS NOT DISTINCT FROM" keeps the planner off the claim index,
            -- as in _order_settle().
            UPDATE webhooks.inbox AS e
            SET order_held = false
            FROM s
            WHERE s.fast AND e.id = s.first_id
              AND e.status IS NOT DISTINCT FROM 'pending'
              AND e.order_held
            RETURNING e.id
        )
        SELECT s.p, s.k FROM s
        WHERE NOT s.fast
        ORDER BY s.p, s.k
    LOOP
        PERFORM webhooks._order_settle(v_slow.p, v_slow.k);
    END LOOP;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_settle_many(text[], text[]) IS
  'Private: _order_settle() for each sequence (providers[i], order_keys[i]), the common case (every unfinished '
  'event of the sequence held: its first may run) decided for all of them in one statement. Called once per '
  'batch by _mark_processed() and process_batch().';
REVOKE EXECUTE ON FUNCTION webhooks._order_settle_many(text[], text[]) FROM PUBLIC;
-- end sql/src/order/_order_settle_many.sql
