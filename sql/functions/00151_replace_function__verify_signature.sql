-- +goose Up
-- begin sql/src/verify/_verify_signature.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_signature is the runner's Provider.Verify in SQL: it checks
-- the signature of one delivery (normalised headers, exact raw body bytes)
-- against the secrets of a provider kind and returns NULL when it is valid,
-- else the runner's reason:
--
--   signature missing | signature malformed | timestamp missing |
--   timestamp malformed | timestamp out of tolerance | signature mismatch
--
-- It hands the delivery to the kind's own webhooks._verify_<kind> (one file
-- each, sql/src/verify/_verify_<kind>.sql), which parses its header, checks a
-- signed timestamp before any HMAC or Ed25519 verification, then the MACs
-- (_hmac_reason). One CASE branch per row of webhooks.provider_kinds:
-- TestEveryKindIsComplete keeps the branches and the table equal. A CASE, not
-- EXECUTE format('webhooks.%I', ...): a dynamic call is parsed and planned on
-- every delivery (the bench numbers are in docs/providers/README.md).
CREATE OR REPLACE FUNCTION webhooks._verify_signature(
    kind    text,
    secrets text[],
    headers jsonb,
    body    bytea,
    at      timestamptz,
    url     text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL UNSAFE
AS $$
BEGIN
    CASE _verify_signature.kind
    WHEN 'github'           THEN RETURN webhooks._verify_github(secrets, headers, body, at, url);
    WHEN 'linear'           THEN RETURN webhooks._verify_linear(secrets, headers, body, at, url);
    WHEN 'paddle'           THEN RETURN webhooks._verify_paddle(secrets, headers, body, at, url);
    WHEN 'shopify'          THEN RETURN webhooks._verify_shopify(secrets, headers, body, at, url);
    WHEN 'slack'            THEN RETURN webhooks._verify_slack(secrets, headers, body, at, url);
    WHEN 'square'           THEN RETURN webhooks._verify_square(secrets, headers, body, at, url);
    WHEN 'standardwebhooks' THEN RETURN webhooks._verify_standardwebhooks(secrets, headers, body, at, url);
    WHEN 'stripe'           THEN RETURN webhooks._verify_stripe(secrets, headers, body, at, url);
    WHEN 'sume'             THEN RETURN webhooks._verify_sume(secrets, headers, body, at, url);
    ELSE
        RAISE EXCEPTION 'pginbox: unknown provider kind "%"', _verify_signature.kind
            USING ERRCODE = 'invalid_parameter_value';
    END CASE;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_signature(text, text[], jsonb, bytea, timestamptz, text) IS
  'Private: the runner''s Provider.Verify in SQL. Returns NULL when the signature of (headers, body) '
  'verifies with any of the secrets for the provider kind (and a signed timestamp is within 5 minutes '
  'of at), else the runner''s reason: signature missing|malformed|mismatch, timestamp missing|malformed|out of tolerance. '
  'Dispatches to webhooks._verify_<kind>; url: the notification URL kind square signs before the body.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_signature(text, text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_signature.sql
-- _verify_signature gained url (DEFAULT NULL, the URL kind square signs):
-- the old signature goes (private, granted to no one).
DROP FUNCTION webhooks._verify_signature(text, text[], jsonb, bytea, timestamptz);
