-- +goose Up
-- begin sql/src/order/_order_sync.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_sync is the trigger that keeps order_held right whatever
-- changes an ordered event: complete(), fail(), _mark_processed(),
-- _fail_pending(), replay(), rescue_leases(), release(), prune(), a payload
-- reconciled by ingest_webhook(). After such a change (a status other than
-- processing, or another key or order value), or the deletion of an
-- unfinished ordered event, it settles the sequences the event was and is in
-- (_order_settle). Its WHEN clauses (webhooks.events' triggers
-- events_order_sync and events_order_sync_delete) leave unordered events
-- out, so they cost nothing. set_ordering(), clear_ordering(),
-- _mark_processed() and process_batch() switch it off for their own
-- statements (pginbox.order_bulk 'on', or 'mark' where the statement also
-- does _order_mark_late()'s work) and settle themselves. While
-- ingest_webhook() reconciles a payload (pginbox.order_ingest 'on') it
-- never waits for a sequence's lock: ingest took them within its bounded
-- wait, and one not held raises 55P03 (_order_busy).
CREATE OR REPLACE FUNCTION webhooks._order_sync()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.current_setting('pginbox.order_bulk', true) IN ('on', 'mark') THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM webhooks._order_settle(OLD.provider, OLD.order_key);
        RETURN NULL;
    END IF;
    IF pg_catalog.current_setting('pginbox.order_ingest', true) = 'on' THEN
        -- ingest_webhook() reconciling a payload took both sequences'
        -- locks within its bounded wait; should the row have moved since
        -- its look, it refuses the delivery rather than wait here.
        IF OLD.order_key IS NOT NULL AND NOT webhooks._order_try_lock(OLD.provider, OLD.order_key) THEN
            PERFORM webhooks._order_busy(OLD.provider, OLD.external_id, OLD.order_key);
        END IF;
        IF NEW.order_key IS NOT NULL AND NOT webhooks._order_try_lock(NEW.provider, NEW.order_key) THEN
            PERFORM webhooks._order_busy(NEW.provider, NEW.external_id, NEW.order_key);
        END IF;
    END IF;
    PERFORM webhooks._order_settle(OLD.provider, OLD.order_key);
    IF NEW.order_key IS DISTINCT FROM OLD.order_key OR NEW.provider IS DISTINCT FROM OLD.provider THEN
        PERFORM webhooks._order_settle(NEW.provider, NEW.order_key);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_sync() IS
  'Private trigger (events_order_sync, events_order_sync_delete on webhooks.inbox): settles the sequences of an '
  'ordered event after its status, key or order value changed or it was deleted.';
REVOKE EXECUTE ON FUNCTION webhooks._order_sync() FROM PUBLIC;
-- end sql/src/order/_order_sync.sql
