-- +goose Up
-- begin sql/src/verify/_whpk_key.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._whpk_key turns a Standard Webhooks public key "whpk_<base64>"
-- into its 32 bytes the way the runner does (decodeWhpk): base64, padded or
-- not, after the "whpk_" prefix. NULL when the secret has no such prefix or
-- the rest is not base64 of 32 bytes. Never raises, never echoes the key.
CREATE OR REPLACE FUNCTION webhooks._whpk_key(secret text)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    v_key bytea;
BEGIN
    IF NOT pg_catalog.starts_with(_whpk_key.secret, 'whpk_') THEN
        RETURN NULL;
    END IF;
    v_key := coalesce(webhooks._base64_decode(pg_catalog.substr(_whpk_key.secret, 6), true),
                      webhooks._base64_decode(pg_catalog.substr(_whpk_key.secret, 6), false));
    IF pg_catalog.octet_length(v_key) <> 32 THEN
        RETURN NULL;
    END IF;
    RETURN v_key;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._whpk_key(text) IS
  'Private: the 32-byte Ed25519 public key of a Standard Webhooks whpk_ key (base64, padded or not, after '
  'the prefix); NULL when it is not one. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._whpk_key(text) FROM PUBLIC;
-- end sql/src/verify/_whpk_key.sql
