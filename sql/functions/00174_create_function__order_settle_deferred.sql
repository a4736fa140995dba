-- +goose Up
-- begin sql/src/order/_order_settle_deferred.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_settle_deferred settles the sequences listed in
-- webhooks.order_unsettled: those of events stored held while another
-- transaction held their sequence's lock (_order_ingest(), _order_defer()).
-- Up to max_sequences of them, oldest first; each only when its lock is
-- free right now (_order_try_lock): it never waits, and a sequence whose
-- lock is still held stays listed for the next call. For each one locked,
-- its rows are deleted first and the sequence settled after (_order_settle):
-- the settle's snapshot is taken after the delete's, so it sees every event
-- whose row the delete removed (an event and its row commit together).
-- Returns how many sequences it settled.
--
-- Called at the end of an ingest_batch() call that listed a sequence, by
-- _order_settle_many() after each processed batch that touched an ordered
-- sequence and by _order_sync() after each status change of an ordered
-- event, so a listed sequence waits at most until the lock's holder commits
-- and the next of these runs. Its settles do not fire the triggers again.
CREATE OR REPLACE FUNCTION webhooks._order_settle_deferred(max_sequences integer DEFAULT 100)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seq record;
    v_n   integer := 0;
BEGIN
    FOR v_seq IN
        SELECT u.provider, u.order_key
        FROM webhooks.order_unsettled AS u
        GROUP BY u.provider, u.order_key
        ORDER BY min(u.id)
        LIMIT greatest(_order_settle_deferred.max_sequences, 1)
    LOOP
        CONTINUE WHEN NOT webhooks._order_try_lock(v_seq.provider, v_seq.order_key);
        DELETE FROM webhooks.order_unsettled AS u
        WHERE u.provider = v_seq.provider AND u.order_key = v_seq.order_key;
        PERFORM webhooks._order_settle(v_seq.provider, v_seq.order_key);
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_settle_deferred(integer) IS
  'Private: settles up to max_sequences sequences listed in webhooks.order_unsettled whose lock is free now '
  '(never waits) and removes them from it; returns how many. Called by ingest_batch(), _order_settle_many() and '
  '_order_sync().';
REVOKE EXECUTE ON FUNCTION webhooks._order_settle_deferred(integer) FROM PUBLIC;
-- end sql/src/order/_order_settle_deferred.sql
