-- +goose Up
-- begin sql/src/verify/_verify_paddle.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_paddle is the runner's paddle verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- Paddle-Signature: ts=<ts>;h1=<hex>[;h1=...] over "<ts>:<body>"; two
-- different ts values are malformed (which was signed would be a guess);
-- the timestamp within 5 minutes either way.
CREATE OR REPLACE FUNCTION webhooks._verify_paddle(
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
    c_hex64  CONSTANT text := '^[0-9A-Fa-f]{64}$';
    v_header  text;
    v_entry   text;
    v_pos     integer;
    v_sigs    bytea[] := '{}';
    v_ts_raw  text;
    v_ts_seen boolean := false;
BEGIN
    v_header := coalesce(_verify_paddle.headers -> 'paddle-signature' ->> 0, '');
    IF v_header ~ ('^[' || c_ws || ']*$') THEN
        RETURN 'signature missing';
    END IF;
    FOREACH v_entry IN ARRAY pg_catalog.string_to_array(v_header, ';') LOOP
        v_entry := pg_catalog.regexp_replace(v_entry, '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        v_pos := pg_catalog.strpos(v_entry, '=');
        CONTINUE WHEN v_pos = 0;
        IF pg_catalog.left(v_entry, v_pos - 1) = 'ts' THEN
            IF v_ts_seen AND pg_catalog.substr(v_entry, v_pos + 1) <> v_ts_raw COLLATE "C" THEN
                RETURN 'timestamp malformed';
            END IF;
            v_ts_raw := pg_catalog.substr(v_entry, v_pos + 1);
            v_ts_seen := true;
        ELSIF pg_catalog.left(v_entry, v_pos - 1) = 'h1' AND pg_catalog.substr(v_entry, v_pos + 1) ~ c_hex64 THEN
            v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, v_pos + 1), 'hex');
        END IF;
    END LOOP;
    IF pg_catalog.cardinality(v_sigs) = 0 THEN
        RETURN 'signature malformed';
    END IF;
    IF NOT v_ts_seen THEN
        RETURN 'timestamp missing';
    END IF;
    IF v_ts_raw = '' THEN
        RETURN 'timestamp malformed';
    END IF;
    RETURN webhooks._hmac_reason(_verify_paddle.secrets,
        pg_catalog.convert_to(v_ts_raw || ':', 'UTF8') || _verify_paddle.body, v_sigs, v_ts_raw, _verify_paddle.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_paddle(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the paddle signature: Paddle-Signature ts=<ts>;h1=<hex> over "<ts>:<body>", 5 minutes either way. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_paddle(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_paddle.sql
