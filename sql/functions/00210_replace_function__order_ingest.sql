-- +goose Up
-- begin sql/src/order/_order_ingest.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_ingest gives ingest_webhook() what it stores with a new
-- event of provider: its sequence key and order value (_order_values) and
-- whether it must wait. For an ordered event it takes the sequence's lock
-- first (no settle of the sequence runs until the ingest commits), and the
-- event waits whenever its sequence has an unfinished event;
-- ingest_webhook() then settles the sequence, which lets it run at once if
-- it sorts before everything there and nothing is in flight (a late
-- arrival). An event that starts or continues an idle sequence is stored
-- runnable and needs no settle.
--
-- The lock is waited for until wait_until at most (_order_lock_within);
-- NULL means one second from now. Still held by another transaction then
-- (set_ordering() on a backlog, a complete(), fail() or replay() not
-- committed yet), order_busy is true and the caller stores nothing: a
-- delivery whose place in its sequence cannot be decided now is refused
-- for the sender to retry rather than stored undecided, since a decision
-- taken later could let a later event of the sequence run first.
--
-- A value the sequence index cannot hold (_order_values' skipped) leaves
-- the event unordered: counted in webhooks.order_skipped per provider and
-- reason, and logged (RAISE LOG) with the event's key and the reason. For
-- an unordered event: one look-up in webhooks.ordering, no lock.
CREATE OR REPLACE FUNCTION webhooks._order_ingest(
    provider    text,
    external_id text,
    payload     jsonb,
    wait_until  timestamptz,
    OUT order_key  text,
    OUT order_num  numeric,
    OUT order_text text,
    OUT order_held boolean,
    OUT order_busy boolean
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_skipped text;
BEGIN
    SELECT v.order_key, v.order_num, v.order_text, v.skipped INTO order_key, order_num, order_text, v_skipped
    FROM webhooks._order_values(_order_ingest.provider, _order_ingest.payload) AS v;
    order_held := false;
    order_busy := false;
    IF v_skipped IS NOT NULL THEN
        INSERT INTO webhooks.order_skipped AS s (provider, reason, events, last_external_id, last_detail)
        VALUES (_order_ingest.provider, split_part(v_skipped, ' of ', 1), 1, _order_ingest.external_id, v_skipped)
        ON CONFLICT (provider, reason) DO UPDATE
        SET events           = s.events + 1,
            last_at          = now(),
            last_external_id = excluded.last_external_id,
            last_detail      = excluded.last_detail;
        RAISE LOG 'pginbox: event %/% stored unordered: its % cannot be indexed', _order_ingest.provider,
            _order_ingest.external_id, v_skipped;
        RETURN;
    END IF;
    IF order_key IS NULL THEN
        RETURN;
    END IF;
    IF NOT webhooks._order_lock_within(_order_ingest.provider, order_key,
                                       coalesce(_order_ingest.wait_until, clock_timestamp() + interval '1 second')) THEN
        order_busy := true;
        RETURN;
    END IF;
    order_held := EXISTS (
        SELECT FROM webhooks.inbox AS e
        WHERE e.provider = _order_ingest.provider
          AND e.order_key = _order_ingest.order_key
          AND e.order_key IS NOT NULL
          AND e.status <> 'processed');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_ingest(text, text, jsonb, timestamptz) IS
  'Private: the order_key, order_num, order_text and order_held a new event of provider is stored with; takes its '
  'sequence''s lock when it is ordered, waiting until wait_until at most (NULL: 1 s), else order_busy. A value '
  'too large to index leaves the event unordered, counted in webhooks.order_skipped and logged.';
REVOKE EXECUTE ON FUNCTION webhooks._order_ingest(text, text, jsonb, timestamptz) FROM PUBLIC;
-- end sql/src/order/_order_ingest.sql
