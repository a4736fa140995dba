-- +goose StatementBegin
-- webhooks._order_defer settles one sequence now when its lock is free
-- (_order_try_lock, then _order_settle), and otherwise, instead of waiting
-- for it, lists the sequence in webhooks.order_unsettled for
-- _order_settle_deferred() and returns at once. The events_order_sync
-- trigger calls it instead of _order_settle() while ingest_webhook()
-- reconciles a payload (pginbox.order_defer 'on'): a delivery never waits
-- on a sequence lock. Sets pginbox.order_deferred 'on' for the transaction
-- when it listed one, so that ingest_batch() tries again at its end.
CREATE OR REPLACE FUNCTION webhooks._order_defer(provider text, order_key text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF _order_defer.provider IS NULL OR _order_defer.order_key IS NULL THEN
        RETURN;
    END IF;
    IF webhooks._order_try_lock(_order_defer.provider, _order_defer.order_key) THEN
        PERFORM webhooks._order_settle(_order_defer.provider, _order_defer.order_key);
        RETURN;
    END IF;
    INSERT INTO webhooks.order_unsettled (provider, order_key)
    VALUES (_order_defer.provider, _order_defer.order_key);
    PERFORM pg_catalog.set_config('pginbox.order_deferred', 'on', true);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_defer(text, text) IS
  'Private: settles sequence (provider, order_key) when its lock is free; else lists it in '
  'webhooks.order_unsettled for _order_settle_deferred(), without waiting.';
REVOKE EXECUTE ON FUNCTION webhooks._order_defer(text, text) FROM PUBLIC;
