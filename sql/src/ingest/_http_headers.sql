-- +goose StatementBegin
-- webhooks._http_headers normalises the headers argument of ingest_signed() to
-- {"lower-case name": ["value", ...]}: a JSON object of header name to a string
-- or to an array of strings (a header sent several times). Names are matched
-- case-insensitively, as HTTP does, by folding ASCII letters only (like Go's
-- http.Header; lower() would also fold e.g. the Kelvin sign into "k"). When
-- one name comes in several spellings their values are joined in jsonb key
-- order; send each header once. Verification, like the runner's
-- http.Header.Get, reads the first value of a header.
CREATE OR REPLACE FUNCTION webhooks._http_headers(headers jsonb)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $$
DECLARE
    v_out   jsonb := '{}';
    v_name  text;
    v_value jsonb;
    v_lower text;
BEGIN
    IF _http_headers.headers IS NULL THEN
        RAISE EXCEPTION 'pginbox: headers must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass a JSON object of header name to string, e.g. {"X-Sume-Signature": "v1=..."}.';
    END IF;
    IF pg_catalog.jsonb_typeof(_http_headers.headers) <> 'object' THEN
        RAISE EXCEPTION 'pginbox: headers must be a JSON object of header name to string, got %',
            pg_catalog.jsonb_typeof(_http_headers.headers)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_name, v_value IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(_http_headers.headers) AS e LOOP
        IF pg_catalog.jsonb_typeof(v_value) = 'string' THEN
            v_value := pg_catalog.jsonb_build_array(v_value);
        ELSIF pg_catalog.jsonb_typeof(v_value) <> 'array' OR EXISTS (
            SELECT FROM pg_catalog.jsonb_array_elements(v_value) AS x(v)
            WHERE pg_catalog.jsonb_typeof(x.v) <> 'string'
        ) THEN
            RAISE EXCEPTION 'pginbox: header "%" must be a string or an array of strings, got %',
                pg_catalog.left(v_name, 100),
                CASE pg_catalog.jsonb_typeof(v_value) WHEN 'array' THEN 'an array holding a non-string'
                     ELSE pg_catalog.jsonb_typeof(v_value) END
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_lower := pg_catalog.translate(v_name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
        v_out := v_out || pg_catalog.jsonb_build_object(v_lower, coalesce(v_out -> v_lower, '[]') || v_value);
    END LOOP;
    RETURN v_out;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._http_headers(jsonb) IS
  'Private: normalises a JSON object of HTTP header name to string (or array of strings) into '
  '{"lower-case name": [values]}, folding ASCII case only; raises 22023 on any other shape.';
REVOKE EXECUTE ON FUNCTION webhooks._http_headers(jsonb) FROM PUBLIC;
