-- +goose StatementBegin
-- webhooks._whsec_key turns a Standard Webhooks secret into its HMAC key the
-- way the runner does (decodeWhsec): drop one optional "whsec_" prefix, then
-- base64-decode, padded or not. NULL when the rest is not base64; an empty
-- bytea when nothing is left. Never raises, never echoes the secret.
CREATE OR REPLACE FUNCTION webhooks._whsec_key(secret text)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    v_s text := _whsec_key.secret;
BEGIN
    IF pg_catalog.starts_with(v_s, 'whsec_') THEN
        v_s := pg_catalog.substr(v_s, 7);
    END IF;
    RETURN coalesce(webhooks._base64_decode(v_s, true), webhooks._base64_decode(v_s, false));
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._whsec_key(text) IS
  'Private: the HMAC key of a Standard Webhooks secret: base64 (padded or not) after an optional '
  'whsec_ prefix; NULL when not base64, empty when nothing is left. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._whsec_key(text) FROM PUBLIC;
