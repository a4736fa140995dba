-- +goose Up
-- begin sql/src/order/_order_mark_late.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_mark_late is the trigger that marks a late event: when an
-- ordered event becomes processed (complete(), a plain UPDATE: every path
-- but _mark_processed(), which does this work in its own statement,
-- pginbox.order_bulk = 'mark') while the high-water mark of its
-- sequence (webhooks.order_marks) is past it, out_of_order is set on the
-- same row version, before it is written; once set it stays set (a replay
-- runs it again, still late). Then the mark moves to the event when it is
-- the later of the two. One primary-key read and one write of
-- webhooks.order_marks, whatever the length of the sequence.
-- Events processed in the same transaction do not count against each
-- other (a statement may write them in any order): a mark that transaction
-- moved (marked_at = now()) is compared as it stood before (prior_*).
-- It also clears order_held: a processed event waits for nothing.
-- Its WHEN clause (trigger events_order_late) leaves unordered events out.
CREATE OR REPLACE FUNCTION webhooks._order_mark_late()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.order_held := false;
    IF NOT NEW.out_of_order THEN
        NEW.out_of_order := EXISTS (
            SELECT FROM webhooks.order_marks AS m
            WHERE m.provider = NEW.provider
              AND m.order_key = NEW.order_key
              AND CASE WHEN m.marked_at = now()
                       THEN m.prior_id IS NOT NULL
                            AND (coalesce(m.prior_num, 'NaN'::numeric), coalesce(m.prior_text, '') COLLATE "C", m.prior_received, m.prior_id)
                              > (coalesce(NEW.order_num, 'NaN'::numeric), coalesce(NEW.order_text, '') COLLATE "C", NEW.received_at, NEW.id)
                       ELSE (coalesce(m.order_num, 'NaN'::numeric), coalesce(m.order_text, '') COLLATE "C", m.received_at, m.event_id)
                              > (coalesce(NEW.order_num, 'NaN'::numeric), coalesce(NEW.order_text, '') COLLATE "C", NEW.received_at, NEW.id)
                  END);
    END IF;
    INSERT INTO webhooks.order_marks AS m (provider, order_key, order_num, order_text, received_at, event_id, marked_at)
    VALUES (NEW.provider, NEW.order_key, NEW.order_num, NEW.order_text, NEW.received_at, NEW.id, now())
    ON CONFLICT (provider, order_key) DO UPDATE
    SET prior_num      = CASE WHEN m.marked_at = now() THEN m.prior_num ELSE m.order_num END,
        prior_text     = CASE WHEN m.marked_at = now() THEN m.prior_text ELSE m.order_text END,
        prior_received = CASE WHEN m.marked_at = now() THEN m.prior_received ELSE m.received_at END,
        prior_id       = CASE WHEN m.marked_at = now() THEN m.prior_id ELSE m.event_id END,
        order_num      = excluded.order_num,
        order_text     = excluded.order_text,
        received_at    = excluded.received_at,
        event_id       = excluded.event_id,
        marked_at      = excluded.marked_at
    WHERE (coalesce(excluded.order_num, 'NaN'::numeric), coalesce(excluded.order_text, '') COLLATE "C", excluded.received_at, excluded.event_id)
        > (coalesce(m.order_num, 'NaN'::numeric), coalesce(m.order_text, '') COLLATE "C", m.received_at, m.event_id);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_mark_late() IS
  'Private trigger (events_order_late on webhooks.inbox): sets out_of_order on an ordered event that becomes '
  'processed after a later event of its sequence was processed (webhooks.order_marks), and moves the mark.';
REVOKE EXECUTE ON FUNCTION webhooks._order_mark_late() FROM PUBLIC;
-- end sql/src/order/_order_mark_late.sql
