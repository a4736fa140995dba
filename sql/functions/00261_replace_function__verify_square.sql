-- +goose Up
-- begin sql/src/verify/_verify_square.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_square is the runner's square verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- X-Square-HmacSha256-Signature: <base64> over "<url><body>", url being the notification URL registered at Square; no timestamp is signed.
CREATE OR REPLACE FUNCTION webhooks._verify_square(
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
    IF _verify_square.url IS NULL THEN
        RAISE EXCEPTION 'pginbox: provider kind square needs its notification URL'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Configure it with webhooks.set_provider(provider, ''square'', secrets, url).';
    END IF;
    v_header := pg_catalog.regexp_replace(
        coalesce(_verify_square.headers -> 'x-square-hmacsha256-signature' ->> 0, ''), '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
    IF v_header = '' THEN
        RETURN 'signature missing';
    END IF;
    v_sig := webhooks._base64_decode(v_header, true);
    IF v_sig IS NULL OR pg_catalog.octet_length(v_sig) <> 32 THEN
        RETURN 'signature malformed';
    END IF;
    RETURN webhooks._hmac_reason(_verify_square.secrets, pg_catalog.convert_to(_verify_square.url, 'UTF8') || _verify_square.body, ARRAY[v_sig], NULL, _verify_square.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_square(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the square signature: X-Square-HmacSha256-Signature <base64> over "<url><body>", url being the notification URL registered at Square. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_square(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_square.sql
