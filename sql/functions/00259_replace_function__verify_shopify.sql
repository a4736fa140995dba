-- +goose Up
-- begin sql/src/verify/_verify_shopify.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_shopify is the runner's shopify verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- X-Shopify-Hmac-Sha256: <base64> over the body; no timestamp is signed.
CREATE OR REPLACE FUNCTION webhooks._verify_shopify(
    secrets text[],
    headers jsonb,
    body    bytea,
    at      timestamptz,
    url     text
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
DECLARE
    -- Go's unicode.IsSpace as the inside of a bracket expression (what
    -- strings.TrimSpace and Fields split on).
    c_ws     CONSTANT text := webhooks._space_class();
    v_header text;
    v_sig    bytea;
BEGIN
    v_header := pg_catalog.regexp_replace(
        coalesce(_verify_shopify.headers -> 'x-shopify-hmac-sha256' ->> 0, ''), '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
    IF v_header = '' THEN
        RETURN 'signature missing';
    END IF;
    v_sig := webhooks._base64_decode(v_header, true);
    IF v_sig IS NULL OR pg_catalog.octet_length(v_sig) <> 32 THEN
        RETURN 'signature malformed';
    END IF;
    RETURN webhooks._hmac_reason(_verify_shopify.secrets, _verify_shopify.body, ARRAY[v_sig], NULL, _verify_shopify.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_shopify(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the shopify signature: X-Shopify-Hmac-Sha256 <base64> over the body. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_shopify(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_shopify.sql
