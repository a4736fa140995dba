-- +goose Up
-- begin sql/src/verify/_verify_slack.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_slack is the runner's slack verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- X-Slack-Signature: v0=<hex> over "v0:<X-Slack-Request-Timestamp>:<body>";
-- the timestamp within 5 minutes either way.
CREATE OR REPLACE FUNCTION webhooks._verify_slack(
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
    v_ts_raw text;
BEGIN
    v_header := pg_catalog.regexp_replace(
        coalesce(_verify_slack.headers -> 'x-slack-signature' ->> 0, ''), '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
    IF v_header = '' THEN
        RETURN 'signature missing';
    END IF;
    IF NOT pg_catalog.starts_with(v_header, 'v0=') OR pg_catalog.substr(v_header, 4) !~ c_hex64 THEN
        RETURN 'signature malformed';
    END IF;
    v_ts_raw := coalesce(_verify_slack.headers -> 'x-slack-request-timestamp' ->> 0, '');
    RETURN webhooks._hmac_reason(_verify_slack.secrets,
        pg_catalog.convert_to('v0:' || v_ts_raw || ':', 'UTF8') || _verify_slack.body,
        ARRAY[pg_catalog.decode(pg_catalog.substr(v_header, 4), 'hex')], v_ts_raw, _verify_slack.at);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_slack(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the slack signature: X-Slack-Signature v0=<hex> over "v0:<X-Slack-Request-Timestamp>:<body>", 5 minutes either way. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_slack(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_slack.sql
