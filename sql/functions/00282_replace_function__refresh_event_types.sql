-- +goose Up
-- begin sql/src/watch/_refresh_event_types.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._refresh_event_types folds the events received since its previous
-- run into webhooks.event_types (first run: the last six weeks, so that
-- traffic_last_hour, which lists a provider from the week it was first seen
-- and looks four weeks back, knows the providers of an install that had
-- events before its first refresh). It rereads 10 minutes before the previous
-- run, because received_at is the delivering transaction's start time and a
-- slow one may commit after the run that should have seen it. The upsert
-- only widens [first_seen_at, last_seen_at], so rereading is harmless. Types
-- unseen for 90 days are dropped. The bound on received_at is a constant
-- when the statement is planned (EXECUTE ... USING), so the planner drops
-- every day slice of history before it and never opens them
-- (TestWindowReadersScanOnlyTheirDays).
CREATE OR REPLACE FUNCTION webhooks._refresh_event_types()
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_since timestamptz;
    v_rows  bigint;
BEGIN
    SELECT r.refreshed_at - interval '10 minutes' INTO v_since
    FROM webhooks.view_refreshes AS r
    WHERE r.view_name = 'event_types';
    v_since := coalesce(v_since, now() - interval '42 days');

    EXECUTE $sql$
    INSERT INTO webhooks.event_types AS t (provider, event_type, first_seen_at, last_seen_at)
    SELECT e.provider, e.event_type, min(e.received_at), max(e.received_at)
    FROM webhooks.events AS e
    WHERE e.received_at >= $1
    GROUP BY e.provider, e.event_type
    ON CONFLICT ON CONSTRAINT event_types_pkey DO UPDATE
        SET first_seen_at = least(t.first_seen_at, excluded.first_seen_at),
            last_seen_at  = greatest(t.last_seen_at, excluded.last_seen_at)
        WHERE excluded.first_seen_at < t.first_seen_at
           OR excluded.last_seen_at > t.last_seen_at$sql$
    USING v_since;
    GET DIAGNOSTICS v_rows = ROW_COUNT;

    DELETE FROM webhooks.event_types AS t
    WHERE t.last_seen_at < now() - interval '90 days';

    RETURN v_rows;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._refresh_event_types() IS
  'Private: folds events received since the previous refresh (minus 10 minutes; first time: six weeks) into '
  'webhooks.event_types and forgets types unseen for 90 days. Returns the rows inserted or widened. '
  'Called by refresh_view(''event_types'').';
REVOKE EXECUTE ON FUNCTION webhooks._refresh_event_types() FROM PUBLIC;
-- end sql/src/watch/_refresh_event_types.sql
