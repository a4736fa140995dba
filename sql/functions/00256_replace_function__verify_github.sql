-- +goose Up
-- begin sql/src/verify/_verify_github.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_github is the runner's github verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- X-Hub-Signature-256: sha256=<hex> over the body; no timestamp is signed.
CREATE OR REPLACE FUNCTION webhooks._verify_github(
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
    v_header text;
BEGIN
    v_header := pg_catalog.regexp_replace(
        coalesce(_verify_github.headers -> 'x-hub-signature-256' ->> 0, ''), '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
    IF v_header = '' THEN
        RETURN 'signature missing';
    END IF;
    IF NOT pg_catalog.starts_with(v_header, 'sha256=') OR pg_catalog.substr(v_header, 8) !~ c_hex64 THEN
        RETURN 'signature malformed';
    END IF;
    RETURN webhooks._hmac_reason(_verify_github.secrets, _verify_github.body,
        ARRAY[pg_catalog.decode(pg_catalog.substr(v_header, 8), 'hex')], NULL, _verify_github.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_github(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the github signature: X-Hub-Signature-256 sha256=<hex> over the body. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_github(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_github.sql
