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
-- out, so they cost nothing. set_ordering() and clear_ordering() switch it
-- off for their own bulk update (pginbox.order_bulk) and settle themselves.
CREATE OR REPLACE FUNCTION webhooks._order_sync()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.current_setting('pginbox.order_bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM webhooks._order_settle(OLD.provider, OLD.order_key);
        RETURN NULL;
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
  'Private trigger (events_order_sync, events_order_sync_delete on webhooks.events): settles the sequences of an '
  'ordered event after its status, key or order value changed or it was deleted.';
REVOKE EXECUTE ON FUNCTION webhooks._order_sync() FROM PUBLIC;
-- end sql/src/order/_order_sync.sql
-- Upgrade steps: the triggers that keep ordered sequences right (their
-- functions are sql/src/order/_order_sync.sql and _order_mark_late.sql).
-- The WHEN clauses leave every unordered event out: a provider without
-- ordering pays nothing. A status change to processing (a claim) changes no
-- sequence's head, so it does not settle.
CREATE TRIGGER events_order_sync
    AFTER UPDATE OF status, order_key, order_num, order_text ON webhooks.events
    FOR EACH ROW
    WHEN ((OLD.order_key IS NOT NULL OR NEW.order_key IS NOT NULL)
          AND ((NEW.status IS DISTINCT FROM OLD.status AND NEW.status <> 'processing')
               OR NEW.order_key IS DISTINCT FROM OLD.order_key
               OR NEW.order_num IS DISTINCT FROM OLD.order_num
               OR NEW.order_text IS DISTINCT FROM OLD.order_text))
    EXECUTE FUNCTION webhooks._order_sync();

CREATE TRIGGER events_order_sync_delete
    AFTER DELETE ON webhooks.events
    FOR EACH ROW
    WHEN (OLD.order_key IS NOT NULL AND OLD.status <> 'processed')
    EXECUTE FUNCTION webhooks._order_sync();

CREATE TRIGGER events_order_late
    BEFORE UPDATE OF status ON webhooks.events
    FOR EACH ROW
    WHEN (NEW.order_key IS NOT NULL AND NEW.status = 'processed' AND OLD.status <> 'processed')
    EXECUTE FUNCTION webhooks._order_mark_late();
