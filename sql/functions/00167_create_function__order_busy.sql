-- +goose Up
-- begin sql/src/order/_order_busy.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_busy raises what ingest_webhook() raises when an ordered
-- delivery's sequence stayed locked by another transaction past its bounded
-- wait (_order_lock_within): SQLSTATE 55P03, naming the delivery and the
-- sequence. Nothing of the delivery is stored; the sender retries it.
CREATE OR REPLACE FUNCTION webhooks._order_busy(provider text, external_id text, order_key text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION 'pginbox: %/% was not stored: its sequence % is locked by another transaction past the wait for it',
        _order_busy.provider, _order_busy.external_id, pg_catalog.quote_literal(pg_catalog.left(_order_busy.order_key, 100))
        USING ERRCODE = 'lock_not_available',
              HINT = 'set_ordering, or a complete(), fail() or replay() of an event of that sequence, has not committed yet. Retry the delivery.';
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_busy(text, text, text) IS
  'Private: raises 55P03 for a delivery whose sequence (order_key) stayed locked past its bounded wait at ingest.';
REVOKE EXECUTE ON FUNCTION webhooks._order_busy(text, text, text) FROM PUBLIC;
-- end sql/src/order/_order_busy.sql
