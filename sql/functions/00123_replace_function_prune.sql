-- +goose Up
-- begin sql/src/admin/prune.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.prune enforces retention in two stages: payloads of processed
-- events go after keep_payload, whole rows (the dedup keys) only after the
-- much longer keep_keys, so a provider's late or manual redelivery is still
-- recognised as a duplicate long after its payload is gone.
--
-- It works in batches of batch_size rows (FOR UPDATE SKIP LOCKED, so it never
-- waits on workers) and stops after max_rows rows of each kind; "more": true
-- in the result means the limit was reached. A scheduler that wants short
-- transactions calls it with a small max_rows until "more" is false.
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
    v_payloads       bigint := 0;
    v_events         bigint := 0;
    v_expectations   bigint := 0;
    v_tombstones     bigint := 0;
    v_runs           bigint := 0;
    v_marks          bigint := 0;
    v_more           boolean := false;
    v_limit          integer;
    v_n              bigint;
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

    -- Stage 1: payloads of processed events.
    LOOP
        v_limit := least(prune.batch_size, coalesce(prune.max_rows - v_payloads, prune.batch_size));
        IF v_limit <= 0 THEN
            v_more := true;
            EXIT;
        END IF;
        WITH batch AS MATERIALIZED (
            SELECT e.id
            FROM webhooks.events AS e
            WHERE e.status = 'processed'
              AND e.payload IS NOT NULL
              AND e.received_at < v_payload_cutoff
            ORDER BY e.received_at
            LIMIT v_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE webhooks.events AS e
        SET payload = NULL, payload_pruned_at = now()
        FROM batch
        WHERE e.id = batch.id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_payloads := v_payloads + v_n;
        EXIT WHEN v_n < v_limit;
    END LOOP;

    -- Stage 2: whole rows, finished ones only, after keep_keys.
    LOOP
        v_limit := least(prune.batch_size, coalesce(prune.max_rows - v_events, prune.batch_size));
        IF v_limit <= 0 THEN
            v_more := true;
            EXIT;
        END IF;
        WITH batch AS MATERIALIZED (
            SELECT e.id
            FROM webhooks.events AS e
            WHERE e.received_at < v_keys_cutoff
              AND e.status IN ('processed', 'dead')
            LIMIT v_limit
            FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM webhooks.events AS e
            USING batch
            WHERE e.id = batch.id
            RETURNING e.provider, e.out_of_order
        ), kept AS (
            -- pginbox_out_of_order_total counts the stored events marked
            -- out_of_order plus these: it must never go down.
            INSERT INTO webhooks.out_of_order_pruned AS p (provider, events)
            SELECT g.provider, count(*) FROM gone AS g WHERE g.out_of_order GROUP BY g.provider
            ON CONFLICT (provider) DO UPDATE SET events = p.events + excluded.events, updated_at = now()
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

    -- The high-water marks of ordered sequences go with the rows they
    -- stood for: a mark last moved before keep_keys was set by an event
    -- processed (and so received) before it, deleted above. Once per run
    -- (the call that finishes it), as it reads the whole (small) table.
    IF NOT v_more THEN
        DELETE FROM webhooks.order_marks AS m
        WHERE m.marked_at < v_keys_cutoff;
        GET DIAGNOSTICS v_marks = ROW_COUNT;
    END IF;

    RETURN jsonb_build_object(
        'payloads_pruned', v_payloads,
        'events_deleted', v_events,
        'expectations_deleted', v_expectations,
        'tombstones_deleted', v_tombstones,
        'reconcile_runs_deleted', v_runs,
        'order_marks_deleted', v_marks,
        'more', v_more
    );
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.prune(interval, interval, integer, bigint) IS
  'Retention: drops payloads of processed events received before now() - keep_payload, and whole finished '
  'rows (processed or dead) received before now() - keep_keys, which must be longer so late redeliveries '
  'still dedupe; with them met expectations and tombstones older than keep_keys, reconcile runs older than '
  'keep_payload, and the order marks of sequences last processed before keep_keys. Works in batches of '
  'batch_size; stops after max_rows of each kind and then reports "more": true. Returns the counts as jsonb.';
REVOKE EXECUTE ON FUNCTION webhooks.prune(interval, interval, integer, bigint) FROM PUBLIC;
-- end sql/src/admin/prune.sql
