-- +goose Up
-- begin sql/src/verify/_verify_sume.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_sume is the runner's sume verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- X-Sume-Signature: v1=<hex> entries (comma or space separated) over
-- "<X-Sume-Timestamp>.<body>"; the timestamp within 5 minutes either way.
CREATE OR REPLACE FUNCTION webhooks._verify_sume(
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
    v_entry   text;
    v_entries integer := 0;
    v_sigs    bytea[] := '{}';
    v_ts_raw  text;
BEGIN
    FOR v_entry IN
        SELECT e FROM pg_catalog.regexp_split_to_table(
            coalesce(_verify_sume.headers -> 'x-sume-signature' ->> 0, ''), '[,' || c_ws || ']+') AS e
        WHERE e <> ''
    LOOP
        v_entries := v_entries + 1;
        IF pg_catalog.starts_with(v_entry, 'v1=') AND pg_catalog.substr(v_entry, 4) ~ c_hex64 THEN
            v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, 4), 'hex');
        END IF;
    END LOOP;
    IF v_entries = 0 THEN
        RETURN 'signature missing';
    END IF;
    IF pg_catalog.cardinality(v_sigs) = 0 THEN
        RETURN 'signature malformed';
    END IF;
    v_ts_raw := coalesce(_verify_sume.headers -> 'x-sume-timestamp' ->> 0, '');
    RETURN webhooks._hmac_reason(_verify_sume.secrets,
        pg_catalog.convert_to(v_ts_raw || '.', 'UTF8') || _verify_sume.body, v_sigs, v_ts_raw, _verify_sume.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_sume(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the sume signature: X-Sume-Signature v1=<hex> entries over "<X-Sume-Timestamp>.<body>", 5 minutes either way. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_sume(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_sume.sql
