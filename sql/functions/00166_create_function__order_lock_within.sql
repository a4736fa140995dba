-- +goose Up
-- begin sql/src/order/_order_lock_within.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_lock_within takes the sequence's lock (_order_lock) if
-- it is free or freed before wait_until, and returns true; false once
-- wait_until has passed with another transaction still holding it. Ingest
-- uses it so that a sequence whose lock is held for long (set_ordering() on
-- a backlog, a complete(), fail() or replay() of one of its events in a
-- transaction not committed yet, a row-lock batch that settled it and runs
-- on) costs its own deliveries a bounded wait and then a refusal the
-- sender retries, never an unbounded wait that holds up the deliveries
-- stored beside them.
--
-- The free lock costs one pg_try_advisory_xact_lock. A held one is waited
-- for with lock_timeout set to the time left, in a block of its own (a
-- subtransaction, on this path only): PostgreSQL wakes the waiter when the
-- holder commits, so it waits no longer than it must. The caller's
-- lock_timeout is put back whatever the outcome. Re-entrant like the lock.
CREATE OR REPLACE FUNCTION webhooks._order_lock_within(provider text, order_key text, wait_until timestamptz)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_left  interval;
    v_saved text;
BEGIN
    IF webhooks._order_try_lock(_order_lock_within.provider, _order_lock_within.order_key) THEN
        RETURN true;
    END IF;
    v_left := _order_lock_within.wait_until - pg_catalog.clock_timestamp();
    IF v_left IS NULL OR v_left <= interval '0' THEN
        RETURN false;
    END IF;
    v_saved := pg_catalog.current_setting('lock_timeout');
    BEGIN
        PERFORM pg_catalog.set_config('lock_timeout',
            GREATEST(1, pg_catalog.ceil(pg_catalog.date_part('epoch', v_left) * 1000))::bigint::text, true);
        PERFORM webhooks._order_lock(_order_lock_within.provider, _order_lock_within.order_key);
    EXCEPTION WHEN lock_not_available THEN
        RETURN false; -- the block's rollback put lock_timeout back
    END;
    PERFORM pg_catalog.set_config('lock_timeout', v_saved, true);
    RETURN true;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_lock_within(text, text, timestamptz) IS
  'Private: takes the transaction-scoped advisory lock of sequence (provider, order_key) if it is free or freed '
  'before wait_until and returns true; false once wait_until passed with the lock still held elsewhere.';
REVOKE EXECUTE ON FUNCTION webhooks._order_lock_within(text, text, timestamptz) FROM PUBLIC;
-- end sql/src/order/_order_lock_within.sql
