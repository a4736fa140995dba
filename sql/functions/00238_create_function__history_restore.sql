-- +goose Up
-- begin sql/src/store/_history_restore.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._history_restore moves the listed events that are in
-- webhooks.history back into the queue (webhooks.inbox), unchanged (still
-- processed), so that replay() can put them back to pending where every
-- worker finds them. Looking an id up opens each live day's id index once:
-- a cold path (replays), never the hot one.
CREATE OR REPLACE FUNCTION webhooks._history_restore(event_ids bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n integer;
BEGIN
    WITH gone AS (
        DELETE FROM webhooks.history AS h
        WHERE h.id = ANY (_history_restore.event_ids)
        RETURNING h.*
    ), back AS (
        INSERT INTO webhooks.inbox (id, provider, external_id, event_type, status, payload, source, received_at,
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
        RETURNING 1
    )
    SELECT pg_catalog.count(*)::integer INTO v_n FROM back;
    RETURN v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._history_restore(bigint[]) IS
  'Private: moves the listed events found in webhooks.history back into webhooks.inbox, unchanged, for replay(); '
  'returns how many.';
REVOKE EXECUTE ON FUNCTION webhooks._history_restore(bigint[]) FROM PUBLIC;
-- end sql/src/store/_history_restore.sql
