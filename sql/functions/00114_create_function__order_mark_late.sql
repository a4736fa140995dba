-- +goose Up
-- begin sql/src/order/_order_mark_late.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_mark_late is the trigger that marks a late event: when an
-- ordered event becomes processed (complete(), _mark_processed(), any path)
-- while a later event of its sequence is already processed, out_of_order is
-- set on the same row version, before it is written; once set it stays set
-- (a replay runs it again, still late). One probe into events_order_idx.
-- It also clears order_held, so processed events sit where the probe looks.
-- Its WHEN clause (trigger events_order_late) leaves unordered events out.
CREATE OR REPLACE FUNCTION webhooks._order_mark_late()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- A processed event waits for nothing; the probe below relies on it.
    NEW.order_held := false;
    IF NEW.out_of_order THEN
        RETURN NEW;
    END IF;
    NEW.out_of_order := EXISTS (
        SELECT FROM webhooks.events AS e
        WHERE e.provider = NEW.provider
          AND e.order_key = NEW.order_key
          AND e.order_key IS NOT NULL
          AND (e.status = 'processed') = true
          AND NOT e.order_held
          AND (coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id)
            > (coalesce(NEW.order_num, 'NaN'::numeric), coalesce(NEW.order_text, '') COLLATE "C", NEW.received_at, NEW.id));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_mark_late() IS
  'Private trigger (events_order_late on webhooks.events): sets out_of_order on an ordered event that becomes '
  'processed after a later event of its sequence was processed.';
REVOKE EXECUTE ON FUNCTION webhooks._order_mark_late() FROM PUBLIC;
-- end sql/src/order/_order_mark_late.sql
