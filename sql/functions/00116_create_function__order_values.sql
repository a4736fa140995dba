-- +goose Up
-- begin sql/src/order/_order_values.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_values computes, once, at ingest, where an event of
-- provider stands in its sequence: the provider's ordering settings applied
-- to the payload (_order_values_at). For a provider without ordering it is
-- one primary-key look-up in the (small) webhooks.ordering and four NULLs.
-- skipped says why a value the index could not hold left the event
-- unordered (_order_values_at).
CREATE OR REPLACE FUNCTION webhooks._order_values(
    provider text,
    payload  jsonb,
    OUT order_key  text,
    OUT order_num  numeric,
    OUT order_text text,
    OUT skipped    text
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key_path   text;
    v_order_path text;
BEGIN
    SELECT o.key_path, o.order_path INTO v_key_path, v_order_path
    FROM webhooks.ordering AS o
    WHERE o.provider = _order_values.provider;
    IF v_key_path IS NULL THEN
        RETURN;
    END IF;
    SELECT v.order_key, v.order_num, v.order_text, v.skipped INTO order_key, order_num, order_text, skipped
    FROM webhooks._order_values_at(v_key_path, v_order_path, _order_values.payload) AS v;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_values(text, jsonb) IS
  'Private: the sequence key and order value of an event of provider with this payload, per webhooks.ordering '
  '(all NULL when the provider is not ordered or the payload has no usable value; skipped: why a value too large '
  'to index left it unordered). Called once at ingest.';
REVOKE EXECUTE ON FUNCTION webhooks._order_values(text, jsonb) FROM PUBLIC;
-- end sql/src/order/_order_values.sql
