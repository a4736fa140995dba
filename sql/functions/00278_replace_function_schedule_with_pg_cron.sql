-- +goose Up
-- begin sql/src/admin/schedule_with_pg_cron.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.schedule_with_pg_cron schedules pginbox's upkeep inside the
-- database, for deployments without the runner: reconciliation, view refresh
-- plus anomaly checks, and retention, as pg_cron jobs in the current
-- database. Calling it again updates the jobs (pg_cron upserts by name).
--
-- The migrations never require pg_cron: the calls go through EXECUTE, so
-- this function compiles (and raises a clear error) where it is missing.
-- It runs with the caller's rights: the caller needs USAGE on schema cron.
CREATE OR REPLACE FUNCTION webhooks.schedule_with_pg_cron(
    reconcile_schedule text     DEFAULT '* * * * *',
    checks_schedule    text     DEFAULT '* * * * *',
    prune_schedule     text     DEFAULT '17 * * * *',
    keep_payload       interval DEFAULT '30 days',
    keep_keys          interval DEFAULT '400 days'
)
RETURNS TABLE (jobname text, schedule text, jobid bigint)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_job record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RAISE EXCEPTION 'pginbox: pg_cron is not installed in database %', current_database()
            USING ERRCODE = 'undefined_object',
                  HINT = 'add pg_cron to shared_preload_libraries, set cron.database_name, then CREATE EXTENSION pg_cron; or run pginbox serve instead';
    END IF;
    IF keep_keys <= keep_payload THEN
        RAISE EXCEPTION 'pginbox: keep_keys (%) must be longer than keep_payload (%)', keep_keys, keep_payload
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_job IN
        SELECT * FROM (VALUES
            ('pginbox_reconcile', reconcile_schedule, $q$SELECT webhooks.reconcile('pg_cron')$q$),
            ('pginbox_checks', checks_schedule,
             $q$SELECT webhooks.refresh_views(); SELECT count(*) FROM webhooks.run_checks()$q$),
            ('pginbox_prune', prune_schedule,
             format('SELECT webhooks.prune(%L::interval, %L::interval, max_rows => 50000)', keep_payload, keep_keys)),
            -- Without the runner nothing else moves processed events out of
            -- the queue: up to 100,000 a minute.
            ('pginbox_history', '* * * * *', $q$SELECT webhooks.move_history(100000)$q$)
        ) AS j(name, sched, command)
    LOOP
        jobname := v_job.name;
        schedule := v_job.sched;
        EXECUTE 'SELECT cron.schedule_in_database($1, $2, $3, current_database())'
            INTO jobid USING v_job.name, v_job.sched, v_job.command;
        RETURN NEXT;
    END LOOP;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.schedule_with_pg_cron(text, text, text, interval, interval) IS
  'Schedules reconcile(), refresh_views() + run_checks(), prune() and move_history() as pg_cron jobs (pginbox_reconcile, '
  'pginbox_checks, pginbox_prune, and pginbox_history every minute, up to 100,000 events a call) in the current database, for deployments without the runner; calling it '
  'again updates them. Raises a clear error where pg_cron is not installed; the migrations never need it.';
REVOKE EXECUTE ON FUNCTION webhooks.schedule_with_pg_cron(text, text, text, interval, interval) FROM PUBLIC;
-- end sql/src/admin/schedule_with_pg_cron.sql
