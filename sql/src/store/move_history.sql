-- +goose StatementBegin
-- webhooks.move_history moves processed events out of the queue
-- (webhooks.inbox) into their day slices of webhooks.history, up to max_rows
-- per call, so the queue stays as small as the work not yet finished. One
-- statement per call deletes them from the queue and inserts them into
-- history (FOR UPDATE SKIP LOCKED: it never waits for a worker). An event
-- whose day prune() already dropped is only deleted: it is older than
-- keep_payload, and its key stays in webhooks.keys.
--
-- After an upgrade from a release without webhooks.keys, it first copies the
-- keys of the events in the queue into webhooks.keys, in id order, max_rows
-- per call, up to the newest (webhooks.storage_state.keys_pending until a
-- call finds fewer than max_rows left), then drops the queue's old unique
-- keys;
-- nothing is moved before every old key is in webhooks.keys, because the
-- queue's old unique key is what dedupes them until then.
--
-- Called by the runner's schedule and by pg_cron (schedule_with_pg_cron);
-- "more": true means another call has work right away.
CREATE OR REPLACE FUNCTION webhooks.move_history(max_rows integer DEFAULT 10000)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_state   webhooks.storage_state%ROWTYPE;
    v_ids     bigint[];
    v_days    date[];
    v_live    date[];
    v_day     date;
    v_copied  bigint := 0;
    v_moved   bigint := 0;
    v_deleted bigint := 0;
    v_last    bigint;
    v_rows    bigint;
    v_timeout text := pg_catalog.current_setting('lock_timeout');
BEGIN
    IF move_history.max_rows IS NULL OR move_history.max_rows < 1 OR move_history.max_rows > 1000000 THEN
        RAISE EXCEPTION 'pginbox: max_rows must be between 1 and 1000000, got %', move_history.max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO v_state FROM webhooks.storage_state;
    IF v_state.keys_pending THEN
        -- One copier at a time: the row lock on the state.
        SELECT * INTO v_state FROM webhooks.storage_state FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN pg_catalog.jsonb_build_object('keys_copied', 0, 'moved', 0, 'deleted', 0,
                                                 'keys_pending', true, 'more', false);
        END IF;
        -- Every row of the queue, in id order, up to its newest: those
        -- stored while the migration ran went through the old functions,
        -- which wrote no key.
        WITH batch AS MATERIALIZED (
            SELECT e.id, e.provider, e.external_id, e.received_at, e.body_sha256
            FROM webhooks.inbox AS e
            WHERE e.id > v_state.keys_cursor
            ORDER BY e.id
            LIMIT move_history.max_rows
        ), copied AS (
            INSERT INTO webhooks.keys (provider, external_id, event_id, received_at, body_sha256)
            SELECT b.provider, b.external_id, b.id, b.received_at, b.body_sha256 FROM batch AS b
            ON CONFLICT DO NOTHING
            RETURNING 1
        )
        SELECT (SELECT max(b.id) FROM batch AS b), (SELECT count(*) FROM batch AS b), (SELECT count(*) FROM copied)
        INTO v_last, v_rows, v_copied;
        IF v_rows < move_history.max_rows THEN
            -- Every old key is in webhooks.keys: the queue's old unique
            -- keys go (a short ACCESS EXCLUSIVE on the queue, waited for
            -- 200 ms at most: else the next call tries again).
            BEGIN
                PERFORM pg_catalog.set_config('lock_timeout', '200ms', true);
                ALTER TABLE webhooks.inbox DROP CONSTRAINT IF EXISTS events_provider_external_id_key;
                DROP INDEX IF EXISTS webhooks.events_provider_body_sha256_key;
                DROP INDEX IF EXISTS webhooks.events_provider_seq_idx;
                PERFORM pg_catalog.set_config('lock_timeout', v_timeout, true);
            EXCEPTION WHEN lock_not_available THEN
                PERFORM pg_catalog.set_config('lock_timeout', v_timeout, true);
                RETURN pg_catalog.jsonb_build_object('keys_copied', v_copied, 'moved', 0, 'deleted', 0,
                                                     'keys_pending', true, 'more', true);
            END;
            UPDATE webhooks.storage_state
            SET keys_pending = false, keys_cursor = coalesce(v_last, keys_cursor), keys_copied = keys_copied + v_copied,
                keys_done_at = now();
        ELSE
            UPDATE webhooks.storage_state
            SET keys_cursor = v_last, keys_copied = keys_copied + v_copied;
        END IF;
        RETURN pg_catalog.jsonb_build_object('keys_copied', v_copied, 'moved', 0, 'deleted', 0,
                                             'keys_pending', v_rows >= move_history.max_rows,
                                             'more', true);
    END IF;

    -- Pick and lock, then make sure each day has its slice, then move.
    SELECT pg_catalog.array_agg(p.id), pg_catalog.array_agg(DISTINCT (p.received_at AT TIME ZONE 'UTC')::date)
    INTO v_ids, v_days
    FROM (
        SELECT e.id, e.received_at
        FROM webhooks.inbox AS e
        WHERE e.status = 'processed'
        ORDER BY e.status, e.received_at, e.id
        LIMIT move_history.max_rows
        FOR UPDATE SKIP LOCKED
    ) AS p;
    IF v_ids IS NULL THEN
        RETURN pg_catalog.jsonb_build_object('keys_copied', 0, 'moved', 0, 'deleted', 0,
                                             'keys_pending', false, 'more', false);
    END IF;

    v_live := '{}';
    FOREACH v_day IN ARRAY v_days LOOP
        IF EXISTS (SELECT FROM webhooks.history_days AS d WHERE d.day = v_day AND d.state = 'dropped') THEN
            CONTINUE;
        END IF;
        PERFORM webhooks._history_slice(v_day);
        v_live := v_live || v_day;
    END LOOP;

    WITH gone AS (
        DELETE FROM webhooks.inbox AS e
        WHERE e.id = ANY (v_ids)
        RETURNING e.*
    ), moved AS (
        INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, source, received_at,
                                      revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
                                      run_after, locked_by, locked_until, last_error, payload_pruned_at,
                                      body_sha256, order_key, order_num, order_text, order_held, out_of_order,
                                      trace_parent, trace_link)
        SELECT g.id, g.provider, g.external_id, g.event_type, g.status, g.payload, g.source, g.received_at,
               g.revision, g.updated_at, g.claimed_at, g.processed_at, g.attempts, g.max_attempts,
               g.run_after, g.locked_by, g.locked_until, g.last_error, g.payload_pruned_at,
               g.body_sha256, g.order_key, g.order_num, g.order_text, g.order_held, g.out_of_order,
               g.trace_parent, g.trace_link
        FROM gone AS g
        WHERE (g.received_at AT TIME ZONE 'UTC')::date = ANY (v_live)
        RETURNING 1
    ), forgotten AS (
        -- The days already dropped keep count of these too, so that a
        -- replay can say why the event is gone.
        UPDATE webhooks.history_days AS d
        SET events = coalesce(d.events, 0) + x.n, min_id = least(d.min_id, x.lo), max_id = greatest(d.max_id, x.hi)
        FROM (SELECT (g.received_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n, min(g.id) AS lo, max(g.id) AS hi
              FROM gone AS g
              WHERE NOT (g.received_at AT TIME ZONE 'UTC')::date = ANY (v_live)
              GROUP BY 1) AS x
        WHERE d.day = x.day
    ), kept AS (
        -- pginbox_out_of_order_total counts stored events marked
        -- out_of_order plus those gone with a dropped day.
        INSERT INTO webhooks.out_of_order_pruned AS p (provider, events)
        SELECT g.provider, count(*) FROM gone AS g
        WHERE g.out_of_order AND NOT (g.received_at AT TIME ZONE 'UTC')::date = ANY (v_live)
        GROUP BY g.provider
        ON CONFLICT (provider) DO UPDATE SET events = p.events + excluded.events, updated_at = now()
    )
    SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM gone) INTO v_moved, v_deleted;
    v_deleted := v_deleted - v_moved;
    UPDATE webhooks.storage_state SET moved = moved + v_moved;

    RETURN pg_catalog.jsonb_build_object('keys_copied', 0, 'moved', v_moved, 'deleted', v_deleted,
                                         'keys_pending', false,
                                         'more', pg_catalog.cardinality(v_ids) >= move_history.max_rows);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.move_history(integer) IS
  'Moves up to max_rows (1..1000000, default 10000) processed events from the queue (webhooks.inbox) into their day '
  'slices of webhooks.history, creating a missing slice; an event of a day prune() dropped is deleted instead (its '
  'key stays). After an upgrade it first copies the keys of older events into webhooks.keys, max_rows per call. '
  'Never waits for a worker (SKIP LOCKED). Returns {"keys_copied", "moved", "deleted", "keys_pending", "more"}.';
REVOKE EXECUTE ON FUNCTION webhooks.move_history(integer) FROM PUBLIC;
