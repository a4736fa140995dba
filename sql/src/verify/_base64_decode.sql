-- +goose StatementBegin
-- webhooks._base64_decode decodes standard base64 exactly as Go's
-- encoding/base64 does, so the SQL verifier accepts the same signatures and
-- secrets as the runner: padded => true is base64.StdEncoding (padding
-- required), false is base64.RawStdEncoding (no padding allowed). Like Go it
-- ignores \r and \n anywhere and any unused low bits of the last character;
-- unlike decode(..., 'base64') it does not skip spaces or tabs.
--
-- It returns NULL for anything else and never raises, so neither a signature
-- header nor a secret can end up quoted in an error message.
CREATE OR REPLACE FUNCTION webhooks._base64_decode(encoded text, padded boolean)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    v_s text := pg_catalog.translate(_base64_decode.encoded, E'\r\n', '');
BEGIN
    IF _base64_decode.padded THEN
        IF v_s !~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' THEN
            RETURN NULL;
        END IF;
    ELSE
        IF v_s !~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2,3})?$' THEN
            RETURN NULL;
        END IF;
        v_s := v_s || pg_catalog.repeat('=', (4 - pg_catalog.length(v_s) % 4) % 4);
    END IF;
    RETURN pg_catalog.decode(v_s, 'base64');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._base64_decode(text, boolean) IS
  'Private: standard base64 decoded like Go''s base64.StdEncoding (padded => true) or RawStdEncoding '
  '(padded => false), ignoring CR and LF; NULL when invalid, never an error.';
REVOKE EXECUTE ON FUNCTION webhooks._base64_decode(text, boolean) FROM PUBLIC;
