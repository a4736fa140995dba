-- +goose Up
-- begin sql/src/order/_order_ingest.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_ingest gives ingest_webhook() what it stores with a new
-- event of provider: its sequence key and order value (_order_values) and
-- whether it must wait. For an ordered event it takes the sequence's lock
-- first (_order_lock: no settle of the sequence runs until the ingest
-- commits), and the event waits whenever its sequence has an unfinished
-- event; ingest_webhook() then settles the sequence, which lets it run at
-- once if it sorts before everything there and nothing is in flight (a late
-- arrival). An event that starts or continues an idle sequence is stored
-- runnable and needs no settle. For an unordered event: one look-up in
-- webhooks.ordering, no lock.
CREATE OR REPLACE FUNCTION webhooks._order_ingest(
    provider text,
    payload  jsonb,
    OUT order_key  text,
    OUT order_num  numeric,
    OUT order_text text,
    OUT order_held boolean
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    SELECT v.order_key, v.order_num, v.order_text INTO order_key, order_num, order_text
    FROM webhooks._order_values(_order_ingest.provider, _order_ingest.payload) AS v;
    order_held := false;
    IF order_key IS NULL THEN
        RETURN;
    END IF;
    PERFORM webhooks._order_lock(_order_ingest.provider, order_key);
    order_held := EXISTS (
        SELECT FROM webhooks.events AS e
        WHERE e.provider = _order_ingest.provider
          AND e.order_key = _order_ingest.order_key
          AND e.order_key IS NOT NULL
          AND e.status <> 'processed');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_ingest(text, jsonb) IS
  'Private: the order_key, order_num, order_text and order_held a new event of provider is stored with; takes '
  'its sequence''s lock when it is ordered.';
REVOKE EXECUTE ON FUNCTION webhooks._order_ingest(text, jsonb) FROM PUBLIC;
-- end sql/src/order/_order_ingest.sql
