-- +goose Up
-- begin sql/src/order/_order_try_lock.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_try_lock is _order_lock() without the wait: it takes the
-- sequence's transaction-scoped advisory lock when no other transaction
-- holds it and returns true, or returns false at once. The first step of
-- _order_lock_within() (ingest's bounded wait), and what the
-- events_order_sync trigger takes during ingest. The lock is the one
-- _order_lock() takes (same key), and re-entrant: true in a transaction
-- that already holds it.
CREATE OR REPLACE FUNCTION webhooks._order_try_lock(provider text, order_key text)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
    SELECT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('pginbox.order' || pg_catalog.chr(31) || _order_try_lock.provider || pg_catalog.chr(31) || _order_try_lock.order_key, 0));
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_try_lock(text, text) IS
  'Private: takes the transaction-scoped advisory lock of one sequence (provider, order_key) when it is free and '
  'returns true; false at once when another transaction holds it.';
REVOKE EXECUTE ON FUNCTION webhooks._order_try_lock(text, text) FROM PUBLIC;
-- end sql/src/order/_order_try_lock.sql
