-- +goose Up
-- begin sql/src/admin/unschedule_pg_cron.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.unschedule_pg_cron removes the jobs schedule_with_pg_cron created
-- (its caller's pginbox_* jobs of the current database) and returns how many.
CREATE OR REPLACE FUNCTION webhooks.unschedule_pg_cron()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_removed integer;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RETURN 0;
    END IF;
    EXECUTE $q$
        SELECT count(*) FILTER (WHERE cron.unschedule(j.jobid))::integer
        FROM cron.job AS j
        WHERE j.jobname IN ('pginbox_reconcile', 'pginbox_checks', 'pginbox_prune', 'pginbox_history')
          AND j.database = current_database()
          AND j.username = current_user
    $q$ INTO v_removed;
    RETURN v_removed;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.unschedule_pg_cron() IS
  'Removes the pg_cron jobs webhooks.schedule_with_pg_cron() created (the caller''s, in this database); returns '
  'how many. 0 where pg_cron is not installed.';
REVOKE EXECUTE ON FUNCTION webhooks.unschedule_pg_cron() FROM PUBLIC;
-- end sql/src/admin/unschedule_pg_cron.sql
