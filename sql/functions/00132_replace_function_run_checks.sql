-- +goose Up
-- begin sql/src/watch/run_checks.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.run_checks evaluates every enabled anomaly check and returns one
-- row per check. A value inside [min_ok, max_ok] (a NULL bound is open) is ok,
-- and so is a NULL value: no data is no anomaly. A check whose query fails
-- (a bug, a missing object, a lock_timeout) is reported not ok with a NULL
-- value and its error recorded: each check runs in its own subtransaction, so
-- one broken check never hides the others.
--
-- Results go to webhooks.check_results, which the function prunes to 7 days
-- itself. On any breach it sends one NOTIFY webhooks_reconcile (delivered at
-- commit) with a JSON payload naming the breached checks, so a listening
-- runner runs a reconciliation pass at once.
--
-- A check whose range_mode is 'learned' is judged against a band from its
-- own history (webhooks._learned_range: its query at the same time of the
-- week over the last four weeks) once learn_min_weeks of those weeks have a
-- value, and against min_ok / max_ok until then. The min_ok / max_ok it
-- returns and records are the range the value was judged against;
-- check_results.range_source says which (fixed, learned, fallback).
--
-- A keyed check (traffic_last_hour: per provider) gives one value per key
-- and the whole under a NULL key (webhooks._check_rows_at). Learned, every
-- key with learn_min_weeks of history is judged against its own band
-- (webhooks._learned_keys) and the check's value is the worst key's distance
-- from its band in half-widths, judged against [-1, 1]; keys with less
-- history (a new provider) are not judged, and check_results.detail names
-- the worst key with its value and band. Fixed, or learned while no key has
-- enough history, the whole is judged against min_ok / max_ok.
--
-- Every query gets now() as $1: a learnable query reads the time from there.
-- The checks read the materialized views (refresh them first: refresh_views()
-- or refresh_view()), a few catalog views, and for traffic_last_hour one
-- hour of webhooks.events by received_at per week looked at plus a few index
-- probes per provider, not the live queue.
CREATE OR REPLACE FUNCTION webhooks.run_checks()
RETURNS TABLE (name text, family text, value numeric, min_ok numeric, max_ok numeric, ok boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
-- A check must not hang on a lock (e.g. a view being filled for the first
-- time): it fails instead, and the run goes on.
SET lock_timeout = '5s'
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_run_at   timestamptz := clock_timestamp();
    v_check    record;
    v_value    numeric;
    v_error    text;
    v_ok       boolean;
    v_started  timestamptz;
    v_breached text[] := '{}';
    v_payload  text;
    v_min      numeric;
    v_max      numeric;
    v_source   text;
    v_band_min numeric;
    v_band_max numeric;
    v_weeks    integer;
    v_detail   text;
    v_worst    record;
    v_judged   boolean;
BEGIN
    FOR v_check IN
        SELECT c.name, c.family, c.query, c.min_ok, c.max_ok, c.range_mode, c.keyed,
               c.learn_k, c.learn_floor, c.learn_floor_ratio, c.learn_min_weeks, c.learn_zero_floor
        FROM webhooks.checks AS c
        WHERE c.enabled
        ORDER BY c.family, c.name
    LOOP
        v_value := NULL;
        v_error := NULL;
        v_band_min := NULL;
        v_band_max := NULL;
        v_weeks := NULL;
        v_detail := NULL;
        v_judged := false;
        v_started := clock_timestamp();
        BEGIN
            IF v_check.keyed AND v_check.range_mode = 'learned' THEN
                -- One evaluation per week for all keys: the worst judged
                -- key, the whole (the fallback's value) and the longest
                -- history (how far learning has come).
                WITH l AS MATERIALIZED (
                    SELECT * FROM webhooks._learned_keys(v_check.query, now(), v_check.learn_k, v_check.learn_floor,
                                                         v_check.learn_floor_ratio, v_check.learn_zero_floor))
                SELECT w.key, w.value, w.weeks, w.median, w.min_ok, w.max_ok, w.distance,
                       (SELECT a.value FROM l AS a WHERE a.key IS NULL) AS whole,
                       (SELECT max(a.weeks) FROM l AS a WHERE a.key IS NOT NULL) AS most_weeks
                INTO v_worst
                FROM (SELECT) AS one
                LEFT JOIN LATERAL (
                    SELECT j.key, j.value, j.weeks, j.median, j.min_ok, j.max_ok, j.distance
                    FROM l AS j
                    WHERE j.key IS NOT NULL AND j.weeks >= v_check.learn_min_weeks AND j.distance IS NOT NULL
                    ORDER BY abs(j.distance) DESC, j.key
                    LIMIT 1
                ) AS w ON true;
                v_judged := v_worst.key IS NOT NULL;
                IF v_judged THEN
                    v_value := v_worst.distance;
                    v_weeks := v_worst.weeks;
                    v_detail := format('worst %s: %s, band [%s, %s] around the median %s of %s weeks',
                                       v_worst.key, trim_scale(v_worst.value), trim_scale(round(v_worst.min_ok, 2)),
                                       trim_scale(round(v_worst.max_ok, 2)), trim_scale(round(v_worst.median, 2)),
                                       v_worst.weeks);
                ELSE
                    v_value := v_worst.whole;
                    v_weeks := coalesce(v_worst.most_weeks, 0);
                END IF;
            ELSIF v_check.keyed THEN
                SELECT r.value INTO v_value
                FROM webhooks._check_rows_at(v_check.query, now()) AS r
                WHERE r.key IS NULL;
            ELSE
                v_value := webhooks._check_value_at(v_check.query, now());
                IF v_check.range_mode = 'learned' THEN
                    SELECT l.min_ok, l.max_ok, l.weeks INTO v_band_min, v_band_max, v_weeks
                    FROM webhooks._learned_range(v_check.query, now(), v_check.learn_k, v_check.learn_floor,
                                                 v_check.learn_floor_ratio, v_check.learn_zero_floor) AS l;
                    v_judged := v_weeks >= v_check.learn_min_weeks;
                END IF;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            -- A failed history is a failed check too: no value, not ok.
            v_value := NULL;
            v_error := format('%s: %s', SQLSTATE, SQLERRM);
            v_judged := false;
            v_detail := NULL;
        END;
        v_min := v_check.min_ok;
        v_max := v_check.max_ok;
        v_source := 'fixed';
        IF v_check.range_mode = 'learned' THEN
            v_source := 'fallback';
            IF v_judged AND v_check.keyed THEN
                -- The worst key's distance from its own band.
                v_min := -1;
                v_max := 1;
                v_source := 'learned';
            ELSIF v_judged THEN
                v_min := v_band_min;
                v_max := v_band_max;
                v_source := 'learned';
            END IF;
        END IF;
        v_ok := v_error IS NULL
            AND (v_value IS NULL
                 OR ((v_min IS NULL OR v_value >= v_min)
                     AND (v_max IS NULL OR v_value <= v_max)));

        INSERT INTO webhooks.check_results (run_at, name, family, value, min_ok, max_ok, ok, error, duration_ms,
                                            range_source, history_weeks, detail)
        VALUES (v_run_at, v_check.name, v_check.family, v_value, v_min, v_max, v_ok, v_error,
                round((extract(epoch FROM clock_timestamp() - v_started) * 1000)::numeric, 3),
                v_source, v_weeks, v_detail)
        -- Two runs in the same microsecond: keep the first result.
        ON CONFLICT ON CONSTRAINT check_results_pkey DO NOTHING;

        IF NOT v_ok THEN
            v_breached := v_breached || v_check.name;
        END IF;

        name   := v_check.name;
        family := v_check.family;
        value  := v_value;
        min_ok := v_min;
        max_ok := v_max;
        ok     := v_ok;
        RETURN NEXT;
    END LOOP;

    DELETE FROM webhooks.check_results AS cr
    WHERE cr.run_at < v_run_at - interval '7 days';

    IF cardinality(v_breached) > 0 THEN
        v_payload := jsonb_build_object('source', 'run_checks', 'run_at', v_run_at,
                                        'breached', to_jsonb(v_breached))::text;
        IF octet_length(v_payload) > 7900 THEN -- NOTIFY payloads stop at 8000 bytes
            v_payload := jsonb_build_object('source', 'run_checks', 'run_at', v_run_at,
                                            'breached_count', cardinality(v_breached))::text;
        END IF;
        PERFORM pg_notify('webhooks_reconcile', v_payload);
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.run_checks() IS
  'Evaluates every enabled check of webhooks.checks: one row (name, family, value, min_ok, max_ok, ok) each. '
  'ok when the value lies in [min_ok, max_ok] (NULL bounds open) or is NULL (no data); min_ok / max_ok are the '
  'range the value was judged against: the fixed range, or for a learned check with enough history the band '
  'learned from the same time of the week over the last four weeks; for a keyed learned check (traffic_last_hour), '
  'the value is the worst key''s distance from its own band in half-widths, judged against [-1, 1]. A check whose query fails '
  'is not ok with a NULL value. Records the results (and range_source) in webhooks.check_results (pruned to 7 days) and, on any '
  'breach, sends NOTIFY webhooks_reconcile with {"source":"run_checks","breached":[names]}. Refresh the views first.';
REVOKE EXECUTE ON FUNCTION webhooks.run_checks() FROM PUBLIC;
-- end sql/src/watch/run_checks.sql
