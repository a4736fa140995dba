-- +goose Up
-- begin sql/src/order/_order_lock.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_lock serialises everything that decides which event of a
-- sequence may run next (ingest of an ordered event, every status change of
-- one, set_ordering): a transaction-scoped advisory lock on the sequence, so
-- it works behind PgBouncer in transaction mode and frees itself on a crash.
-- Whoever takes it next sees what the previous holder committed (the lock is
-- released only after the commit is visible), which is what keeps exactly
-- one event of a sequence runnable at a time.
--
-- A plain SQL function, so that the planner inlines it: a caller that locks
-- many sequences in one statement (_order_settle_many) pays no function call
-- per sequence. Hence no SET clause; its callers fix the search_path.
CREATE OR REPLACE FUNCTION webhooks._order_lock(provider text, order_key text)
RETURNS void
LANGUAGE sql
VOLATILE
AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(
        pg_catalog.hashtextextended('pginbox.order' || pg_catalog.chr(31) || _order_lock.provider || pg_catalog.chr(31) || _order_lock.order_key, 0));
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_lock(text, text) IS
  'Private: takes the transaction-scoped advisory lock of one sequence (provider, order_key).';
REVOKE EXECUTE ON FUNCTION webhooks._order_lock(text, text) FROM PUBLIC;
-- end sql/src/order/_order_lock.sql
