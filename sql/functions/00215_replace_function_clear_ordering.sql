-- +goose Up
-- begin sql/src/order/clear_ordering.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.clear_ordering turns ordered processing off for a provider: its
-- settings row goes, and its pending events (those not locked by a worker
-- right now) become unordered and runnable at once. Events in flight keep
-- their key until they finish; their settle then finds no ordering and
-- holds nothing. Idempotent: a provider without ordering is left as it is.
CREATE OR REPLACE FUNCTION webhooks.clear_ordering(provider text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_keys text[];
BEGIN
    PERFORM webhooks._require_text('provider', clear_ordering.provider, 64);
    LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM webhooks.ordering AS o WHERE o.provider = clear_ordering.provider;
    IF NOT FOUND THEN
        RETURN;
    END IF;

    -- Each sequence locked before any of its events is written, as in
    -- set_ordering(): no settle of it runs meanwhile.
    v_keys := ARRAY(
        SELECT DISTINCT e.order_key
        FROM webhooks.inbox AS e
        WHERE e.provider = clear_ordering.provider AND e.order_key IS NOT NULL AND e.status <> 'processed'
        ORDER BY 1);
    PERFORM webhooks._order_lock(clear_ordering.provider, k) FROM pg_catalog.unnest(v_keys) AS k;

    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'on', true);
    UPDATE webhooks.inbox AS e
    SET order_key  = NULL,
        order_num  = NULL,
        order_text = NULL,
        order_held = false
    FROM (
        SELECT p.id
        FROM webhooks.inbox AS p
        WHERE p.provider = clear_ordering.provider
          AND p.status = 'pending'
          AND p.order_key IS NOT NULL
        FOR UPDATE OF p SKIP LOCKED
    ) AS v
    WHERE e.id = v.id;
    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'off', true);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.clear_ordering(text) IS
  'Turns strict order per key off for provider: its pending events become unordered and runnable at once. '
  'Idempotent.';
REVOKE EXECUTE ON FUNCTION webhooks.clear_ordering(text) FROM PUBLIC;
-- end sql/src/order/clear_ordering.sql
