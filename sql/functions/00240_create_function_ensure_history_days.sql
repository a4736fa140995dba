-- +goose Up
-- begin sql/src/store/ensure_history_days.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.ensure_history_days creates the day slices of webhooks.history
-- from yesterday to days_ahead days ahead (UTC), so that completions and the
-- move into history never wait for one. prune() calls it, and so does the
-- runner's schedule; an install kept by pg_cron alone stays ahead with the
-- prune job.
CREATE OR REPLACE FUNCTION webhooks.ensure_history_days(days_ahead integer DEFAULT 7)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_today   date := (now() AT TIME ZONE 'UTC')::date;
    v_created integer := 0;
    v_day     date;
BEGIN
    IF ensure_history_days.days_ahead IS NULL OR ensure_history_days.days_ahead < 0
       OR ensure_history_days.days_ahead > 366 THEN
        RAISE EXCEPTION 'pginbox: days_ahead must be between 0 and 366, got %', ensure_history_days.days_ahead
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_day IN SELECT g::date FROM pg_catalog.generate_series(v_today - 1, v_today + ensure_history_days.days_ahead, interval '1 day') AS g LOOP
        IF pg_catalog.to_regclass('webhooks.history_' || pg_catalog.to_char(v_day, 'YYYYMMDD')) IS NULL THEN
            PERFORM webhooks._history_slice(v_day);
            v_created := v_created + 1;
        END IF;
    END LOOP;
    RETURN v_created;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.ensure_history_days(integer) IS
  'Creates the missing day slices of webhooks.history from yesterday to days_ahead (0..366, default 7) days ahead, '
  'UTC; returns how many it created. Called by prune() and the runner''s schedule.';
REVOKE EXECUTE ON FUNCTION webhooks.ensure_history_days(integer) FROM PUBLIC;
-- end sql/src/store/ensure_history_days.sql
-- The days around the upgrade get their slices now; prune() and the
-- runner keep creating them ahead.
SELECT webhooks.ensure_history_days(7);
