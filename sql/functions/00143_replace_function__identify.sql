-- +goose Up
-- begin sql/src/ingest/_identify.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify is the runner's Provider.Identify in SQL: for an already
-- verified delivery it returns the idempotency key, the event type and the
-- body as jsonb, or (all three NULL) the runner's reason for refusing it:
--
--   body not json | body nested too deep | idempotency key missing |
--   idempotency key invalid | event id mismatch | event type missing |
--   event type invalid
--
-- Body (readEnvelope): valid UTF-8 and JSON that jsonb accepts, else body not
-- json (so is nesting beyond encoding/json's limit of 10000 levels); then
-- nested at most 64 levels (runner.MaxJSONDepth), else body nested too deep;
-- then a JSON object, else body not json.
-- Only top-level members are read (a nested payload.request_id is never a key);
-- a name given twice keeps its last value, as in jsonb and in the runner.
-- Keys: a JSON string, or a JSON integer as the exact digits sent (read from
-- the json text, since jsonb would turn 1e3 into 1000 and -0 into 0); then
-- webhooks._valid_text(). The kind's own webhooks._identify_<kind> (one file
-- each, sql/src/ingest/_identify_<kind>.sql) picks the key and the type from
-- the members and headers; no key and no reason is a handshake (slack's
-- url_verification): payload only. One CASE branch per row of
-- webhooks.provider_kinds (TestEveryKindIsComplete keeps them equal).
CREATE OR REPLACE FUNCTION webhooks._identify(
    kind        text,
    headers     jsonb,
    body        bytea,
    OUT external_id text,
    OUT event_type  text,
    OUT payload     jsonb,
    OUT reason      text
)
RETURNS record
LANGUAGE plpgsql
STABLE
PARALLEL UNSAFE
AS $$
#variable_conflict use_column
DECLARE
    v_text      text;
    -- The top-level members: name -> {"t": json type,
    -- "k": value as a key (string, or integer digits), "s": string value}.
    v_m         jsonb;
    v_found     record;
    v_type      text;
BEGIN
    BEGIN
        v_text := pg_catalog.convert_from(_identify.body, 'UTF8');
        payload := v_text::jsonb;
        -- A container at level n of the tree (the root is level 0) is nested
        -- n + 1 deep. Nesting needs two bytes a level, so short bodies skip the walk.
        IF pg_catalog.octet_length(_identify.body) >= 130
           AND pg_catalog.jsonb_path_exists(payload,
               'strict $.**{64} ? (@.type() == "object" || @.type() == "array")'::jsonpath) THEN
            IF pg_catalog.octet_length(_identify.body) >= 20002
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
    INTO v_m
    FROM pg_catalog.json_each(v_text::json) WITH ORDINALITY AS m(key, value, n);
    v_m := coalesce(v_m, '{}');

    CASE _identify.kind
    WHEN 'github'           THEN v_found := webhooks._identify_github(_identify.headers, payload, v_m);
    WHEN 'linear'           THEN v_found := webhooks._identify_linear(_identify.headers, payload, v_m);
    WHEN 'paddle'           THEN v_found := webhooks._identify_paddle(_identify.headers, payload, v_m);
    WHEN 'shopify'          THEN v_found := webhooks._identify_shopify(_identify.headers, payload, v_m);
    WHEN 'slack'            THEN v_found := webhooks._identify_slack(_identify.headers, payload, v_m);
    WHEN 'square'           THEN v_found := webhooks._identify_square(_identify.headers, payload, v_m);
    WHEN 'standardwebhooks' THEN v_found := webhooks._identify_standardwebhooks(_identify.headers, payload, v_m);
    WHEN 'stripe'           THEN v_found := webhooks._identify_stripe(_identify.headers, payload, v_m);
    WHEN 'sume'             THEN v_found := webhooks._identify_sume(_identify.headers, payload, v_m);
    ELSE
        RAISE EXCEPTION 'pginbox: unknown provider kind "%"', _identify.kind
            USING ERRCODE = 'invalid_parameter_value';
    END CASE;
    reason := v_found.reason;
    external_id := v_found.external_id;
    v_type := v_found.event_type;
    IF reason IS NULL AND external_id IS NULL THEN
        RETURN;  -- a handshake: payload set, no key, no type
    END IF;

    IF reason IS NULL THEN
        IF v_type = '' THEN
            reason := 'event type missing';
        ELSIF NOT webhooks._valid_text(v_type) THEN
            reason := 'event type invalid';
        ELSE
            event_type := v_type;
        END IF;
    END IF;

    IF reason IS NOT NULL THEN
        external_id := NULL;
        event_type := NULL;
        payload := NULL;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify(text, jsonb, bytea) IS
  'Private: the runner''s Provider.Identify in SQL. For a verified delivery returns (external_id, '
  'event_type, payload) by the kind''s rules, or only reason: body not json, body nested too deep, '
  'idempotency key missing|invalid, event id mismatch, event type missing|invalid.';
REVOKE EXECUTE ON FUNCTION webhooks._identify(text, jsonb, bytea) FROM PUBLIC;
-- end sql/src/ingest/_identify.sql
