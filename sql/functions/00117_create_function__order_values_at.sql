-- +goose Up
-- begin sql/src/order/_order_values_at.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._order_values_at reads an event's sequence key and order value
-- from its payload with the given SQL/JSON paths (a provider's
-- webhooks.ordering row). Anything unusable leaves the event unordered
-- (all three NULL), never an error: no value at key_path, a JSON null, an
-- object or an array there; with an order_path, the same at order_path.
-- Paths are evaluated silently (lax paths never raise on a missing member;
-- strict ones and arithmetic errors are silenced the same way).
--
-- A value that the sequence index (events_order_idx) could not hold leaves
-- the event unordered too, and says why in skipped: a key or a text order
-- value over 255 bytes, or a number order value that takes over 255 bytes
-- stored (about 500 significant digits; a B-tree entry holds at most about
-- 2.7 kB, and an event that cannot be indexed cannot be stored at all).
-- skipped is NULL for every other event, usable or not.
--
-- The key is the value as text: a string's own text, a number or boolean in
-- its JSON spelling (so 42 and "42" are one sequence). The order value goes
-- to order_num when it is a JSON number (compared as a number) and to
-- order_text when it is a string or a boolean (compared byte by byte).
CREATE OR REPLACE FUNCTION webhooks._order_values_at(
    key_path   text,
    order_path text,
    payload    jsonb,
    OUT order_key  text,
    OUT order_num  numeric,
    OUT order_text text,
    OUT skipped    text
)
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    v_key   jsonb;
    v_order jsonb;
BEGIN
    IF _order_values_at.key_path IS NULL OR _order_values_at.payload IS NULL THEN
        RETURN;
    END IF;
    v_key := jsonb_path_query_first(_order_values_at.payload, _order_values_at.key_path::jsonpath, '{}'::jsonb, true);
    IF v_key IS NULL OR jsonb_typeof(v_key) NOT IN ('string', 'number', 'boolean') THEN
        RETURN;
    END IF;
    IF _order_values_at.order_path IS NOT NULL THEN
        v_order := jsonb_path_query_first(_order_values_at.payload, _order_values_at.order_path::jsonpath, '{}'::jsonb, true);
        IF v_order IS NULL OR jsonb_typeof(v_order) NOT IN ('string', 'number', 'boolean') THEN
            RETURN;
        END IF;
        IF jsonb_typeof(v_order) = 'number' THEN
            order_num := v_order::numeric;
            IF pg_column_size(order_num) > 255 THEN
                order_num := NULL;
                skipped := format('order number of %s bytes (over 255)', pg_column_size(v_order::numeric));
                RETURN;
            END IF;
        ELSE
            order_text := CASE jsonb_typeof(v_order) WHEN 'string' THEN v_order #>> '{}' ELSE v_order::text END;
            IF octet_length(order_text) > 255 THEN
                skipped := format('order text of %s bytes (over 255)', octet_length(order_text));
                order_text := NULL;
                RETURN;
            END IF;
        END IF;
    END IF;
    order_key := CASE jsonb_typeof(v_key) WHEN 'string' THEN v_key #>> '{}' ELSE v_key::text END;
    IF octet_length(order_key) > 255 THEN
        skipped := format('key of %s bytes (over 255)', octet_length(order_key));
        order_key  := NULL;
        order_num  := NULL;
        order_text := NULL;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._order_values_at(text, text, jsonb) IS
  'Private: the sequence key and order value (order_num for a JSON number, order_text for a string or boolean) '
  'at key_path and order_path in payload; all NULL (unordered) when a value is missing, null, an object or an '
  'array, or cannot be indexed (a key or text over 255 bytes, a number over 255 bytes stored): then skipped says '
  'which and how large. Never raises on a payload.';
REVOKE EXECUTE ON FUNCTION webhooks._order_values_at(text, text, jsonb) FROM PUBLIC;
-- end sql/src/order/_order_values_at.sql
