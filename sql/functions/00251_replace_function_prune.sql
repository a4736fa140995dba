-- +goose Up
-- begin sql/src/admin/prune.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.prune enforces retention in two stages: payloads of processed
-- events go after keep_payload, the dedup keys only after the much longer
-- keep_keys, so a provider's late or manual redelivery is still recognised
-- as a duplicate long after its payload is gone.
--
-- Processed events leave webhooks.events with their whole day of history:
-- the day slices of webhooks.history older than keep_payload are detached
-- and dropped (an event stays up to a day longer than keep_payload). Keys
-- (webhooks.keys), and finished events still in the queue, go in batches of
-- batch_size rows (FOR UPDATE SKIP LOCKED, so it never waits on workers),
-- max_rows of each kind at most; "more": true in the result means a limit
-- was reached or a slice's lock was not granted ("busy" names it). A
-- scheduler that wants short transactions calls it with a small max_rows
-- until "more" is false. It also creates the coming week's day slices, so
-- an install kept by pg_cron alone stays ahead.
CREATE OR REPLACE FUNCTION webhooks.prune(
    keep_payload interval,
    keep_keys    interval,
    batch_size   integer DEFAULT 5000,
    max_rows     bigint  DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_payload_cutoff timestamptz := now() - prune.keep_payload;
    v_keys_cutoff    timestamptz := now() - prune.keep_keys;
    v_key_rows_cutoff timestamptz;
    v_payloads       bigint := 0;
    v_events         bigint := 0;
    v_expectations   bigint := 0;
    v_tombstones     bigint := 0;
    v_runs           bigint := 0;
    v_marks          bigint := 0;
    v_more           boolean := false;
    v_limit          integer;
    v_n              bigint;
    v_min            bigint;
    v_max            bigint;
    v_day            date;
    v_cutoff_day     date;
    v_slice          text;
    v_locked         boolean;
    v_busy           text;
    v_days           integer := 0;
    v_lock_timeout   text := pg_catalog.current_setting('lock_timeout');
BEGIN
    IF prune.keep_payload IS NULL OR prune.keep_payload <= interval '0' THEN
        RAISE EXCEPTION 'pginbox: keep_payload must be a positive interval, got %', prune.keep_payload
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF prune.keep_keys IS NULL OR prune.keep_keys <= prune.keep_payload THEN
        RAISE EXCEPTION 'pginbox: keep_keys (%) must be longer than keep_payload (%) so late redeliveries still dedupe',
            prune.keep_keys, prune.keep_payload
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF prune.batch_size IS NULL OR prune.batch_size < 1 THEN
        RAISE EXCEPTION 'pginbox: batch_size must be positive, got %', prune.batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF prune.max_rows IS NOT NULL AND prune.max_rows < 1 THEN
        RAISE EXCEPTION 'pginbox: max_rows must be positive or NULL, got %', prune.max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Stage 0: the coming days' slices of history.
    PERFORM webhooks.ensure_history_days(7);

    -- Stage 1: payloads of processed events still in the queue (not yet
    -- moved into history), row by row as before; history's days are dropped
    -- whole at the end (stage 4).
    LOOP
        v_limit := least(prune.batch_size, coalesce(prune.max_rows - v_payloads, prune.batch_size));
        IF v_limit <= 0 THEN
            v_more := true;
            EXIT;
        END IF;
        WITH batch AS MATERIALIZED (
            SELECT e.id
            FROM webhooks.inbox AS e
            WHERE e.status = 'processed'
              AND e.payload IS NOT NULL
              AND e.received_at < v_payload_cutoff
            ORDER BY e.received_at
            LIMIT v_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE webhooks.inbox AS e
        SET payload = NULL, payload_pruned_at = now()
        FROM batch
        WHERE e.id = batch.id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_payloads := v_payloads + v_n;
        EXIT WHEN v_n < v_limit;
    END LOOP;

    -- Stage 2: keys, after keep_keys, with whatever finished event of theirs
    -- is still in the queue (processed, or dead). A key whose event is
    -- still to run (pending, processing) stays, and so does every key of a
    -- day whose history is not dropped yet (prune was busy): an event in
    -- webhooks.events always has its key.
    SELECT least(v_keys_cutoff, coalesce(min(d.day)::timestamp AT TIME ZONE 'UTC', v_keys_cutoff))
    INTO v_key_rows_cutoff
    FROM webhooks.history_days AS d
    WHERE d.state = 'live';
    LOOP
        v_limit := least(prune.batch_size, coalesce(prune.max_rows - v_events, prune.batch_size));
        IF v_limit <= 0 THEN
            v_more := true;
            EXIT;
        END IF;
        WITH batch AS MATERIALIZED (
            SELECT k.provider, k.external_id, k.event_id
            FROM webhooks.keys AS k
            WHERE k.received_at < v_key_rows_cutoff
              AND NOT EXISTS (SELECT FROM webhooks.inbox AS e
                              WHERE e.id = k.event_id AND e.status IN ('pending', 'processing'))
            LIMIT v_limit
            FOR UPDATE SKIP LOCKED
        ), gone_events AS (
            DELETE FROM webhooks.inbox AS e
            USING batch
            WHERE e.id = batch.event_id
              AND e.status IN ('processed', 'dead')
            RETURNING e.provider, e.out_of_order
        ), kept AS (
            INSERT INTO webhooks.out_of_order_pruned AS p (provider, events)
            SELECT g.provider, count(*) FROM gone_events AS g WHERE g.out_of_order GROUP BY g.provider
            ON CONFLICT (provider) DO UPDATE SET events = p.events + excluded.events, updated_at = now()
        ), gone AS (
            DELETE FROM webhooks.keys AS k
            USING batch
            WHERE k.provider = batch.provider AND k.external_id = batch.external_id
            RETURNING 1
        )
        SELECT count(*) INTO v_n FROM gone;
        v_events := v_events + v_n;
        EXIT WHEN v_n < v_limit;
    END LOOP;

    -- Bookkeeping tables follow the keys.
    DELETE FROM webhooks.expectations AS x
    WHERE x.met_at IS NOT NULL AND x.met_at < v_keys_cutoff;
    GET DIAGNOSTICS v_expectations = ROW_COUNT;

    DELETE FROM webhooks.tombstones AS t
    WHERE t.created_at < v_keys_cutoff;
    GET DIAGNOSTICS v_tombstones = ROW_COUNT;

    DELETE FROM webhooks.reconcile_runs AS r
    WHERE r.started_at < v_payload_cutoff;
    GET DIAGNOSTICS v_runs = ROW_COUNT;

    -- What was recorded about events, by its own age: failed attempts
    -- after keep_payload (not those of an event still to run: its last
    -- error stays on the row too), replays and contradictions after
    -- keep_keys.
    DELETE FROM webhooks.event_errors AS x
    WHERE x.at < v_payload_cutoff
      AND NOT EXISTS (SELECT FROM webhooks.inbox AS e WHERE e.id = x.event_id AND e.status IN ('pending', 'processing'));
    DELETE FROM webhooks.replays AS r WHERE r.replayed_at < v_keys_cutoff;
    DELETE FROM webhooks.contradictions AS c WHERE c.detected_at < v_keys_cutoff;

    -- The high-water marks of ordered sequences go with the rows they
    -- stood for: a mark last moved before keep_keys was set by an event
    -- processed (and so received) before it, deleted above. Once per run
    -- (the call that finishes it), as it reads the whole (small) table.
    IF NOT v_more THEN
        DELETE FROM webhooks.order_marks AS m
        WHERE m.marked_at < v_keys_cutoff;
        GET DIAGNOSTICS v_marks = ROW_COUNT;
    END IF;

    -- Stage 4: history, a day at a time: every slice whose whole day is older
    -- than keep_payload is detached and dropped (catalog work: no row is
    -- written one by one). Last, because DETACH holds ACCESS EXCLUSIVE on
    -- webhooks.history until this call commits: readers of webhooks.events
    -- and moves into history wait that long; ingest, claims and completions
    -- never touch history. Each DETACH waits 50 ms at most for the lock,
    -- five times; then this call stops with "busy" and "more".
    v_cutoff_day := (v_payload_cutoff AT TIME ZONE 'UTC')::date;
    FOR v_day IN
        SELECT d.day FROM webhooks.history_days AS d
        WHERE d.state = 'live' AND d.day < v_cutoff_day
        ORDER BY d.day
    LOOP
        IF prune.max_rows IS NOT NULL AND v_payloads >= prune.max_rows THEN
            v_more := true;
            EXIT;
        END IF;
        v_slice := 'history_' || pg_catalog.to_char(v_day, 'YYYYMMDD');
        IF pg_catalog.to_regclass('webhooks.' || v_slice) IS NOT NULL THEN
            -- Take the slice's lock first, briefly, retrying: a reader of
            -- webhooks.events or a move into history holds it off only
            -- for as long as its statement runs, and ingest never waits.
            v_locked := false;
            FOR v_try IN 1..5 LOOP
                BEGIN
                    PERFORM pg_catalog.set_config('lock_timeout', '50ms', true);
                    EXECUTE pg_catalog.format('ALTER TABLE webhooks.history DETACH PARTITION webhooks.%I', v_slice);
                    PERFORM pg_catalog.set_config('lock_timeout', v_lock_timeout, true);
                    v_locked := true;
                    EXIT;
                EXCEPTION WHEN lock_not_available THEN
                    PERFORM pg_catalog.set_config('lock_timeout', v_lock_timeout, true);
                    PERFORM pg_catalog.pg_sleep(0.02 * (2 ^ v_try));
                END;
            END LOOP;
            IF NOT v_locked THEN
                v_busy := v_slice;
                v_more := true;
                EXIT;
            END IF;
            -- Its ids from the ends of its id index; its size counted when
            -- it is small, else taken from the statistics (reltuples, kept
            -- by autovacuum and ANALYZE): counting a day of a busy install
            -- would read all of it.
            EXECUTE pg_catalog.format(
                'SELECT min(id), max(id) FROM webhooks.%I', v_slice) INTO v_min, v_max;
            SELECT CASE WHEN c.relpages < 1000 OR c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END INTO v_n
            FROM pg_catalog.pg_class AS c WHERE c.oid = pg_catalog.to_regclass('webhooks.' || v_slice);
            IF v_n IS NULL THEN
                EXECUTE pg_catalog.format('SELECT count(*) FROM webhooks.%I', v_slice) INTO v_n;
            END IF;
            -- pginbox_out_of_order_total counts the stored events marked
            -- out_of_order plus those gone: it must never go down.
            EXECUTE pg_catalog.format(
                'INSERT INTO webhooks.out_of_order_pruned AS p (provider, events) '
                'SELECT s.provider, count(*) FROM webhooks.%I AS s WHERE s.out_of_order GROUP BY s.provider '
                'ON CONFLICT (provider) DO UPDATE SET events = p.events + excluded.events, updated_at = now()',
                v_slice);
            EXECUTE pg_catalog.format('DROP TABLE webhooks.%I', v_slice);
        ELSE
            v_n := 0;
            v_min := NULL;
            v_max := NULL;
        END IF;
        -- A day dropped before (and made again by a late event or an
        -- import) keeps what its first drop recorded.
        UPDATE webhooks.history_days AS d
        SET state = 'dropped', dropped_at = now(), events = coalesce(d.events, 0) + v_n,
            min_id = least(d.min_id, v_min), max_id = greatest(d.max_id, v_max)
        WHERE d.day = v_day;
        v_payloads := v_payloads + v_n;
        v_days := v_days + 1;
    END LOOP;

    -- Keys were kept for the days still live when stage 2 ran; if this call
    -- dropped such days, keys past keep_keys may remain: call again.
    IF v_days > 0 AND v_key_rows_cutoff < v_keys_cutoff THEN
        v_more := true;
    END IF;

    RETURN jsonb_build_object(
        'payloads_pruned', v_payloads,
        'events_deleted', v_events,
        'expectations_deleted', v_expectations,
        'tombstones_deleted', v_tombstones,
        'reconcile_runs_deleted', v_runs,
        'order_marks_deleted', v_marks,
        'days_dropped', v_days,
        'busy', v_busy,
        'more', v_more
    );
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.prune(interval, interval, integer, bigint) IS
  'Retention: drops the day slices of webhooks.history older than now() - keep_payload (whole UTC days) and the '
  'payloads of processed events still in the queue received before it, and deletes the dedup keys (webhooks.keys) '
  'received before now() - keep_keys, which must be longer so late redeliveries still dedupe, with their finished '
  'events (processed or dead) still in the queue; with them met expectations and tombstones older than keep_keys, '
  'reconcile runs older than keep_payload, and the order marks of sequences last processed before keep_keys. '
  'Creates the coming week''s day slices. Works in batches of batch_size; stops after max_rows of each kind, or at a '
  'slice whose lock stays taken ("busy"), and then reports "more": true. Returns the counts as jsonb.';
REVOKE EXECUTE ON FUNCTION webhooks.prune(interval, interval, integer, bigint) FROM PUBLIC;
-- end sql/src/admin/prune.sql
