-- +goose Up
-- begin sql/src/recover/reconcile.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.reconcile runs one reconciliation pass. Call it in a transaction of
-- its own (autocommit): the pass is that transaction.
--
-- Only one pass runs at a time: it takes pg_try_advisory_xact_lock on
-- webhooks._reconcile_lock_key() (31638899913811299, "pginrec").
-- Transaction-scoped, so it works behind PgBouncer in transaction mode and is
-- freed on commit, rollback or a crash. While another transaction holds it,
-- the call returns {"skipped": true} at once, records nothing and waits for
-- nothing: a signal during a running pass does not start a second one.
--
-- A pass:
--   1. rescues expired leases with rescue_leases(batch_size), batch after
--      batch, at most max_batches batches (then "leases_more": true and the
--      next pass goes on), so a pass never locks more than
--      batch_size * max_batches events; sends one NOTIFY webhooks_events when
--      it put anything back to pending;
--   2. records contradictions between state and payload
--      (_record_contradictions) among the events received since the previous
--      pass started, minus lookback (covering transactions that committed
--      late), or among all events with recheck_all (a terminal job event
--      whose job id is over 255 bytes is not checked for a second terminal
--      event: counted in jobs_unchecked);
--   3. marks met the open expectations whose event or tombstone exists;
--   4. marks resolved the tombstones whose event arrived after all;
--   5. counts the gaps left (find_gaps()), and records the run in
--      webhooks.reconcile_runs.
--
-- It returns the counts as jsonb, {"skipped": false, "run_id": ..., ...}:
-- see the COMMENT below for the keys.
CREATE OR REPLACE FUNCTION webhooks.reconcile(
    trigger     text     DEFAULT 'manual',
    batch_size  integer  DEFAULT 1000,
    max_batches integer  DEFAULT 100,
    lookback    interval DEFAULT '10 minutes',
    recheck_all boolean  DEFAULT false
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_clock_start  timestamptz := clock_timestamp();
    v_since        timestamptz;
    v_rescued      bigint := 0;
    v_dead         bigint := 0;
    v_batches      integer := 0;
    v_more         boolean := false;
    v_batch_rescued integer;
    v_batch_dead   integer;
    v_found        jsonb;
    v_met          bigint;
    v_resolved     bigint;
    v_gaps         bigint;
    v_totals       jsonb;
    v_counts       jsonb;
    v_duration     numeric;
    v_run_id       bigint;
BEGIN
    PERFORM webhooks._require_text('trigger', reconcile.trigger, 64);
    IF reconcile.batch_size IS NULL OR reconcile.batch_size < 1 OR reconcile.batch_size > 100000 THEN
        RAISE EXCEPTION 'pginbox: batch_size must be between 1 and 100000, got %', reconcile.batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reconcile.max_batches IS NULL OR reconcile.max_batches < 1 THEN
        RAISE EXCEPTION 'pginbox: max_batches must be positive, got %', reconcile.max_batches
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reconcile.lookback IS NULL OR reconcile.lookback < interval '0' THEN
        RAISE EXCEPTION 'pginbox: lookback must be a non-negative interval, got %', reconcile.lookback
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reconcile.recheck_all IS NULL THEN
        RAISE EXCEPTION 'pginbox: recheck_all must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;

    IF NOT pg_try_advisory_xact_lock(webhooks._reconcile_lock_key()) THEN
        RETURN jsonb_build_object('skipped', true);
    END IF;

    -- 1. Expired leases, in bounded batches.
    FOR v_i IN 1..reconcile.max_batches LOOP
        SELECT r.rescued, r.dead INTO v_batch_rescued, v_batch_dead
        FROM webhooks.rescue_leases(reconcile.batch_size) AS r;
        IF v_batch_rescued + v_batch_dead > 0 THEN
            v_batches := v_batches + 1;
            v_rescued := v_rescued + v_batch_rescued;
            v_dead    := v_dead + v_batch_dead;
        END IF;
        EXIT WHEN v_batch_rescued + v_batch_dead < reconcile.batch_size;
        v_more := v_i = reconcile.max_batches;
    END LOOP;
    IF v_rescued > 0 THEN
        PERFORM pg_notify('webhooks_events', 'reconcile');
    END IF;

    -- 2. Contradictions among recently written events.
    IF reconcile.recheck_all THEN
        v_since := '-infinity';
    ELSE
        SELECT max(r.started_at) - reconcile.lookback INTO v_since
        FROM webhooks.reconcile_runs AS r
        WHERE r.finished_at IS NOT NULL;
        v_since := coalesce(v_since, '-infinity');
    END IF;
    v_found := webhooks._record_contradictions(v_since);

    -- 3. Expectations met by their event or a tombstone.
    UPDATE webhooks.expectations AS x
    SET met_at = now()
    WHERE x.met_at IS NULL
      AND (EXISTS (SELECT FROM webhooks.keys AS k
                   WHERE k.provider = x.provider AND k.external_id = x.external_id)
           OR EXISTS (SELECT FROM webhooks.tombstones AS t
                      WHERE t.provider = x.provider AND t.external_id = x.external_id));
    GET DIAGNOSTICS v_met = ROW_COUNT;

    -- 4. Tombstones whose event arrived after all.
    UPDATE webhooks.tombstones AS t
    SET resolved_at = now(), resolved_event_id = k.event_id
    FROM webhooks.keys AS k
    WHERE t.resolved_at IS NULL
      AND k.provider = t.provider
      AND k.external_id = t.external_id;
    GET DIAGNOSTICS v_resolved = ROW_COUNT;

    -- 5. What is left, and the record of the pass.
    SELECT count(*) INTO v_gaps FROM webhooks.find_gaps() AS g;

    SELECT jsonb_build_object(
               'event_type_mismatch', count(*) FILTER (WHERE k.kind = 'event_type_mismatch'),
               'error_missing',       count(*) FILTER (WHERE k.kind = 'error_missing'),
               'status_mismatch',     count(*) FILTER (WHERE k.kind = 'status_mismatch'),
               'duplicate_terminal',  count(*) FILTER (WHERE k.kind = 'duplicate_terminal'))
    INTO v_totals
    FROM webhooks.contradictions AS k;

    v_duration := round((extract(epoch FROM clock_timestamp() - v_clock_start) * 1000)::numeric, 3);
    v_counts := jsonb_build_object(
        'trigger',              reconcile.trigger,
        'leases_rescued',       v_rescued,
        'leases_dead',          v_dead,
        'lease_batches',        v_batches,
        'lease_batch_size',     reconcile.batch_size,
        'leases_more',          v_more,
        'checked_since',        v_since,
        'events_checked',       v_found -> 'checked',
        'contradictions',       v_found -> 'new',
        'contradictions_total', v_totals,
        'jobs_unchecked',       v_found -> 'jobs_unchecked',
        'expectations_met',     v_met,
        'tombstones_resolved',  v_resolved,
        'gaps',                 v_gaps);

    INSERT INTO webhooks.reconcile_runs AS r (started_at, finished_at, duration_ms, trigger, counts)
    VALUES (now(), clock_timestamp(), v_duration, reconcile.trigger, v_counts)
    RETURNING r.id INTO v_run_id;

    RETURN jsonb_build_object('skipped', false, 'run_id', v_run_id, 'duration_ms', v_duration) || v_counts;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.reconcile(text, integer, integer, interval, boolean) IS
  'One reconciliation pass under pg_try_advisory_xact_lock(webhooks._reconcile_lock_key()); returns '
  '{"skipped": true} at once while another pass holds it. Otherwise rescues expired leases in batches of '
  'batch_size (at most max_batches), records new contradictions between state and payload, marks met '
  'expectations and resolved tombstones, records the run in webhooks.reconcile_runs and returns '
  '{"skipped": false, "run_id", "duration_ms", "trigger", "leases_rescued", "leases_dead", "lease_batches", '
  '"lease_batch_size", "leases_more", "checked_since", "events_checked", "contradictions": {kind: new}, '
  '"contradictions_total": {kind: all}, "jobs_unchecked", "expectations_met", "tombstones_resolved", "gaps"}. Call it in its '
  'own transaction.';
REVOKE EXECUTE ON FUNCTION webhooks.reconcile(text, integer, integer, interval, boolean) FROM PUBLIC;
-- end sql/src/recover/reconcile.sql
