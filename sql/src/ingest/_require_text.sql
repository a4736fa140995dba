-- +goose StatementBegin
-- webhooks._require_text raises a clear exception when an identifier argument
-- is NULL, empty, blank or longer than p_max_bytes. NUL bytes cannot reach it:
-- Postgres text rejects them at the protocol level with SQLSTATE 22021.
CREATE OR REPLACE FUNCTION webhooks._require_text(p_name text, p_value text, p_max_bytes integer)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
BEGIN
    IF p_value IS NULL THEN
        RAISE EXCEPTION 'pginbox: % must not be null', p_name
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF btrim(p_value, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'pginbox: % must not be empty', p_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(p_value) > p_max_bytes THEN
        RAISE EXCEPTION 'pginbox: % is % bytes long; the limit is % bytes',
            p_name, octet_length(p_value), p_max_bytes
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._require_text(text, text, integer) IS
  'Private: raises a clear exception when p_value is NULL, blank or longer than p_max_bytes bytes.';
REVOKE EXECUTE ON FUNCTION webhooks._require_text(text, text, integer) FROM PUBLIC;
