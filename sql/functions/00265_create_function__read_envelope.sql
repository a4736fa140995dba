-- +goose Up
-- begin sql/src/ingest/_read_envelope.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._read_envelope is the runner's sig.ReadEnvelope in SQL, the part
-- of _identify every kind shares: the body of a verified delivery as jsonb
-- (payload) and its top-level members, or (both NULL) the reason it is
-- refused: body not json | body nested too deep.
--
-- Body: valid UTF-8 and JSON that jsonb accepts, else body not json (so is
-- nesting beyond encoding/json's limit of 10000 levels); then nested at most
-- 64 levels (runner.MaxJSONDepth), else body nested too deep; then a JSON
-- object, else body not json.
-- members: name -> {"t": json type, "k": value as a key (a JSON string, or a
-- JSON integer as the exact digits sent: read from the json text, since jsonb
-- would turn 1e3 into 1000 and -0 into 0), "s": string value}. Only top-level
-- members are read (a nested payload.request_id is never a key); a name given
-- twice keeps its last value, as in jsonb and in the runner.
-- PARALLEL UNSAFE: the EXCEPTION block starts a subtransaction.
CREATE OR REPLACE FUNCTION webhooks._read_envelope(
    body        bytea,
    OUT payload jsonb,
    OUT members jsonb,
    OUT reason  text
)
RETURNS record
LANGUAGE plpgsql
STABLE
PARALLEL UNSAFE
AS $$
#variable_conflict use_column
DECLARE
    v_text text;
BEGIN
    BEGIN
        v_text := pg_catalog.convert_from(_read_envelope.body, 'UTF8');
        payload := v_text::jsonb;
        -- A container at level n of the tree (the root is level 0) is nested
        -- n + 1 deep. Nesting needs two bytes a level, so short bodies skip the walk.
        IF pg_catalog.octet_length(_read_envelope.body) >= 130
           AND pg_catalog.jsonb_path_exists(payload,
               'strict $.**{64} ? (@.type() == "object" || @.type() == "array")'::jsonpath) THEN
            IF pg_catalog.octet_length(_read_envelope.body) >= 20002
               AND pg_catalog.jsonb_path_exists(payload,
                   'strict $.**{10000} ? (@.type() == "object" || @.type() == "array")'::jsonpath) THEN
                reason := 'body not json';          -- beyond encoding/json's own limit
            ELSE
                reason := 'body nested too deep';
            END IF;
        ELSIF pg_catalog.jsonb_typeof(payload) <> 'object' THEN
            reason := 'body not json';
        END IF;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        -- Invalid UTF-8, invalid JSON, \u0000, an unpaired surrogate, a number
        -- numeric cannot hold, too deep for the stack. The error text would
        -- quote the body: only the reason goes out.
        reason := 'body not json';
    END;
    IF reason IS NOT NULL THEN
        payload := NULL;
        RETURN;
    END IF;

    SELECT pg_catalog.jsonb_object_agg(m.key, pg_catalog.jsonb_build_object(
               't', pg_catalog.json_typeof(m.value),
               'k', CASE
                        WHEN pg_catalog.json_typeof(m.value) = 'string' THEN m.value #>> '{}'
                        WHEN pg_catalog.json_typeof(m.value) = 'number'
                             AND m.value::text ~ '^-?[0-9]+$' THEN m.value::text
                    END,
               's', CASE WHEN pg_catalog.json_typeof(m.value) = 'string' THEN m.value #>> '{}' END)
           ORDER BY m.n)
    INTO members
    FROM pg_catalog.json_each(v_text::json) WITH ORDINALITY AS m(key, value, n);
    members := coalesce(members, '{}');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._read_envelope(bytea) IS
  'Private (_identify): a verified body as jsonb and its top-level members (name -> type, key text, string '
  'value), or only the reason it is refused: body not json, body nested too deep.';
REVOKE EXECUTE ON FUNCTION webhooks._read_envelope(bytea) FROM PUBLIC;
-- end sql/src/ingest/_read_envelope.sql
