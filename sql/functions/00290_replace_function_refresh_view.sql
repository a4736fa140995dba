-- +goose Up
-- begin sql/src/watch/refresh_view.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.refresh_view refreshes one of the views registered in
-- webhooks.view_refreshes and records when, how long it took and the highest
-- event id handed out before it (the sequence's last value). A materialized view is refreshed CONCURRENTLY, so
-- the checks and the status page keep reading the old contents meanwhile and
-- ingestion (which never touches the view) is not blocked; a registered name
-- that is not a materialized view is refreshed by webhooks._refresh_<name>().
--
-- Every refresher takes the transaction-scoped advisory lock
-- 31638955663652723 (0x70677669657773, "pgviews") with pg_try_advisory_xact_lock:
-- while another transaction holds it, refresh_view returns false at once
-- instead of queueing behind it. Transaction-scoped, so it works behind
-- PgBouncer in transaction mode and frees itself on a crash; re-entrant, so
-- refresh_views() can hold it across all the views of one pass.
--
-- The runner calls refresh_view once per view, each in its own short
-- transaction (a refresh holds a snapshot, and a long-held snapshot stops
-- vacuum); refresh_views() does them all in one call for cron and psql.
CREATE OR REPLACE FUNCTION webhooks.refresh_view(name text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name       text := regexp_replace(coalesce(refresh_view.name, ''), '^webhooks\.', '');
    v_started    timestamptz;
    v_high_water bigint;
BEGIN
    PERFORM webhooks._require_text('name', refresh_view.name, 128);
    IF NOT EXISTS (SELECT FROM webhooks.view_refreshes AS r WHERE r.view_name = v_name) THEN
        RAISE EXCEPTION 'pginbox: % is not a registered view; the views are: %', refresh_view.name,
            (SELECT string_agg(r.view_name, ', ' ORDER BY r.view_name) FROM webhooks.view_refreshes AS r)
            USING ERRCODE = 'undefined_object';
    END IF;

    IF NOT pg_try_advisory_xact_lock(31638955663652723) THEN
        RAISE NOTICE 'pginbox: refresh of % skipped: another transaction is refreshing the views', v_name;
        RETURN false;
    END IF;

    v_started := clock_timestamp();
    -- The mark is read before the refresh takes its snapshot, so an event
    -- committed in between counts as unseen (errs on the side of staleness);
    -- one still in flight below the mark (ids follow inserts, not commits)
    -- is picked up by the next refresh. It is the last id the sequence
    -- handed out, not max(id) of webhooks.events: that would read the
    -- queue and one index of every day slice of history, however many days
    -- are kept. An id taken by a delivery that then stored nothing (a
    -- duplicate that lost the race) is below the mark too: no event has it.
    v_high_water := coalesce(pg_catalog.pg_sequence_last_value('webhooks.events_id_seq'::pg_catalog.regclass), 0);

    IF EXISTS (SELECT FROM pg_catalog.pg_matviews AS m
               WHERE m.schemaname = 'webhooks' AND m.matviewname = v_name AND m.ispopulated) THEN
        EXECUTE format('REFRESH MATERIALIZED VIEW CONCURRENTLY webhooks.%I', v_name);
    ELSIF EXISTS (SELECT FROM pg_catalog.pg_matviews AS m
                  WHERE m.schemaname = 'webhooks' AND m.matviewname = v_name) THEN
        -- CONCURRENTLY needs a populated view: fill it once the blocking way.
        EXECUTE format('REFRESH MATERIALIZED VIEW webhooks.%I', v_name);
    ELSIF to_regprocedure(format('webhooks.%I()', '_refresh_' || v_name)) IS NOT NULL THEN
        EXECUTE format('SELECT webhooks.%I()', '_refresh_' || v_name);
    ELSE
        RAISE EXCEPTION 'pginbox: % is registered but is neither a materialized view nor has a webhooks._refresh_%() function',
            v_name, v_name
            USING ERRCODE = 'undefined_object';
    END IF;

    UPDATE webhooks.view_refreshes AS r
    SET refreshed_at      = v_started,
        duration_ms       = round((extract(epoch FROM clock_timestamp() - v_started) * 1000)::numeric, 3),
        refreshes         = r.refreshes + 1,
        events_high_water = v_high_water
    WHERE r.view_name = v_name;
    RETURN true;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.refresh_view(text) IS
  'Refreshes one registered view (see webhooks.view_refreshes) CONCURRENTLY and records the time, duration and '
  'highest event id handed out before it (pg_sequence_last_value of webhooks.events_id_seq, no read of the events). '
  'Returns false without waiting when another transaction holds the refresh advisory lock '
  '(pg_try_advisory_xact_lock(31638955663652723)). Call it once per view, each in its own transaction, to keep '
  'snapshots short. Raises for an unregistered name.';
REVOKE EXECUTE ON FUNCTION webhooks.refresh_view(text) FROM PUBLIC;
-- end sql/src/watch/refresh_view.sql
