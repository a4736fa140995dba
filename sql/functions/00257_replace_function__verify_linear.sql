-- +goose Up
-- begin sql/src/verify/_verify_linear.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_linear is the runner's linear verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- Linear-Signature: <hex> over the body; then the body's top-level
-- webhookTimestamp (unix milliseconds, a JSON integer), read only once the
-- signature matched (it is inside the signed body): missing, malformed, or
-- more than 5 minutes from at either way. A body that is not a JSON object has
-- none to read and is left to _identify (body not json).
CREATE OR REPLACE FUNCTION webhooks._verify_linear(
    secrets text[],
    headers jsonb,
    body    bytea,
    at      timestamptz,
    url     text
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL UNSAFE
AS $$
DECLARE
    -- Go's unicode.IsSpace as the inside of a bracket expression (what
    -- strings.TrimSpace and Fields split on).
    c_ws     CONSTANT text := webhooks._space_class();
    c_hex64  CONSTANT text := '^[0-9A-Fa-f]{64}$';
    v_header text;
    v_reason text;
    v_member json;
    v_ms     bigint;
BEGIN
    v_header := pg_catalog.regexp_replace(
        coalesce(_verify_linear.headers -> 'linear-signature' ->> 0, ''), '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
    IF v_header = '' THEN
        RETURN 'signature missing';
    END IF;
    IF v_header !~ c_hex64 THEN
        RETURN 'signature malformed';
    END IF;
    v_reason := webhooks._hmac_reason(_verify_linear.secrets, _verify_linear.body,
        ARRAY[pg_catalog.decode(v_header, 'hex')], NULL, _verify_linear.at);
    IF v_reason IS NOT NULL THEN
        RETURN v_reason;
    END IF;
    -- The timestamp: the top-level member, the last one when the name is
    -- given twice (as Go's encoding/json), as written (json, not jsonb, which
    -- would turn 17e11 into digits). A body jsonb refuses (not UTF-8 or JSON,
    -- \u0000, ...) or that is not an object has none to read.
    BEGIN
        IF pg_catalog.jsonb_typeof(pg_catalog.convert_from(_verify_linear.body, 'UTF8')::jsonb) = 'object' THEN
            v_ms := 0;  -- an object: its timestamp is checked
            SELECT m.value INTO v_member
            FROM pg_catalog.json_each(pg_catalog.convert_from(_verify_linear.body, 'UTF8')::json)
                 WITH ORDINALITY AS m(key, value, n)
            WHERE m.key = 'webhookTimestamp'
            ORDER BY m.n DESC
            LIMIT 1;
        END IF;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        v_ms := NULL;
    END;
    IF v_ms IS NULL THEN
        RETURN NULL;
    END IF;
    IF v_member IS NULL OR pg_catalog.json_typeof(v_member) = 'null' THEN
        RETURN 'timestamp missing';
    END IF;
    IF v_member::text !~ '^[0-9]{1,18}$' THEN
        RETURN 'timestamp malformed';
    END IF;
    v_ms := v_member::text::bigint;
    IF pg_catalog.abs(pg_catalog.floor(EXTRACT(epoch FROM _verify_linear.at) * 1000)::bigint - v_ms) > 300000 THEN
        RETURN 'timestamp out of tolerance';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_linear(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the linear signature: Linear-Signature <hex> over the body, then the body''s webhookTimestamp (unix ms) within 5 minutes either way. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_linear(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_linear.sql
