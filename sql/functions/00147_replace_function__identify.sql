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
-- webhooks._valid_text(). Per kind (the same rules as the runner's):
--   sume              first present and not null: job_id, request_id, id; else the
--                     X-Sume-Event-Id header. When the body has an id and the header is
--                     sent they must be equal (the header is not signed). Type: event,
--                     else type (non-empty strings).
--   stripe            body id; type
--   github            X-GitHub-Delivery; X-GitHub-Event, plus "." and the body's
--                     action when it has one
--   standardwebhooks  webhook-id; type
--   shopify           X-Shopify-Event-Id; X-Shopify-Topic
--   paddle            body event_id; event_type
--   slack             body event_id; event.type (a string) of an event_callback, else
--                     type. A url_verification with a non-empty string challenge is a
--                     handshake: no key, no type, the payload only (ingest_signed
--                     answers it and stores nothing); without one, idempotency key missing
--   linear            Linear-Delivery; "<type>.<action>" (both non-empty strings)
--   square            body event_id; type
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
PARALLEL SAFE
AS $$
#variable_conflict use_column
DECLARE
    v_text      text;
    -- The top-level members the rules read: name -> {"t": json type,
    -- "k": value as a key (string, or integer digits), "s": string value}.
    v_m         jsonb;
    v_header_id text;
    v_pick      text;
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
    FROM pg_catalog.json_each(v_text::json) WITH ORDINALITY AS m(key, value, n)
    WHERE m.key IN ('job_id', 'request_id', 'id', 'event', 'type', 'action', 'event_id', 'event_type', 'challenge');
    v_m := coalesce(v_m, '{}');

    CASE _identify.kind
    WHEN 'sume' THEN
        v_header_id := coalesce(_identify.headers -> 'x-sume-event-id' ->> 0, '');
        v_pick := CASE
            WHEN coalesce(v_m -> 'job_id' ->> 't', 'null') <> 'null' THEN 'job_id'
            WHEN coalesce(v_m -> 'request_id' ->> 't', 'null') <> 'null' THEN 'request_id'
            WHEN coalesce(v_m -> 'id' ->> 't', 'null') <> 'null' THEN 'id'
        END;
        IF v_pick IS NOT NULL THEN
            external_id := v_m -> v_pick ->> 'k';
        ELSIF v_header_id <> '' THEN
            external_id := v_header_id;
        ELSE
            reason := 'idempotency key missing';
        END IF;
        IF reason IS NULL AND NOT webhooks._valid_text(external_id) THEN
            reason := 'idempotency key invalid';
        END IF;
        -- The header is not signed: it may only repeat the signed body id.
        IF reason IS NULL AND v_header_id <> '' AND coalesce(v_m -> 'id' ->> 't', 'null') <> 'null'
           AND (NOT webhooks._valid_text(v_m -> 'id' ->> 'k')
                OR (v_m -> 'id' ->> 'k') <> v_header_id COLLATE "C") THEN
            reason := 'event id mismatch';
        END IF;
        v_type := coalesce(nullif(v_m -> 'event' ->> 's', ''), nullif(v_m -> 'type' ->> 's', ''), '');

    WHEN 'stripe' THEN
        IF coalesce(v_m -> 'id' ->> 't', 'null') = 'null' THEN
            reason := 'idempotency key missing';
        ELSIF NOT webhooks._valid_text(v_m -> 'id' ->> 'k') THEN
            reason := 'idempotency key invalid';
        END IF;
        external_id := v_m -> 'id' ->> 'k';
        v_type := coalesce(nullif(v_m -> 'type' ->> 's', ''), '');

    WHEN 'github' THEN
        external_id := coalesce(_identify.headers -> 'x-github-delivery' ->> 0, '');
        v_type := coalesce(_identify.headers -> 'x-github-event' ->> 0, '');
        IF v_type <> '' AND nullif(v_m -> 'action' ->> 's', '') IS NOT NULL THEN
            v_type := v_type || '.' || (v_m -> 'action' ->> 's');
        END IF;

    WHEN 'standardwebhooks' THEN
        external_id := coalesce(_identify.headers -> 'webhook-id' ->> 0, '');
        v_type := coalesce(nullif(v_m -> 'type' ->> 's', ''), '');

    WHEN 'shopify' THEN
        external_id := coalesce(_identify.headers -> 'x-shopify-event-id' ->> 0, '');
        v_type := coalesce(_identify.headers -> 'x-shopify-topic' ->> 0, '');

    WHEN 'slack' THEN
        v_type := coalesce(nullif(v_m -> 'type' ->> 's', ''), '');
        IF v_type = 'url_verification' THEN
            IF nullif(v_m -> 'challenge' ->> 's', '') IS NOT NULL THEN
                RETURN;  -- a handshake: payload set, no key, no type
            END IF;
            reason := 'idempotency key missing';
        ELSIF coalesce(v_m -> 'event_id' ->> 't', 'null') = 'null' THEN
            reason := 'idempotency key missing';
        ELSIF NOT webhooks._valid_text(v_m -> 'event_id' ->> 'k') THEN
            reason := 'idempotency key invalid';
        END IF;
        external_id := v_m -> 'event_id' ->> 'k';
        IF v_type = 'event_callback' THEN
            -- jsonb keeps the last of a repeated name, as Go's encoding/json.
            v_type := CASE WHEN pg_catalog.jsonb_typeof(payload -> 'event' -> 'type') = 'string'
                           THEN payload -> 'event' ->> 'type' ELSE '' END;
        END IF;

    WHEN 'linear' THEN
        external_id := coalesce(_identify.headers -> 'linear-delivery' ->> 0, '');
        v_type := CASE WHEN nullif(v_m -> 'type' ->> 's', '') IS NOT NULL AND nullif(v_m -> 'action' ->> 's', '') IS NOT NULL
                       THEN (v_m -> 'type' ->> 's') || '.' || (v_m -> 'action' ->> 's') ELSE '' END;

    WHEN 'square', 'paddle' THEN
        IF coalesce(v_m -> 'event_id' ->> 't', 'null') = 'null' THEN
            reason := 'idempotency key missing';
        ELSIF NOT webhooks._valid_text(v_m -> 'event_id' ->> 'k') THEN
            reason := 'idempotency key invalid';
        END IF;
        external_id := v_m -> 'event_id' ->> 'k';
        v_type := coalesce(nullif(v_m -> (CASE _identify.kind WHEN 'paddle' THEN 'event_type' ELSE 'type' END) ->> 's', ''), '');

    ELSE
        RAISE EXCEPTION 'pginbox: unknown provider kind "%"', _identify.kind
            USING ERRCODE = 'invalid_parameter_value';
    END CASE;

    -- The header-keyed kinds: a header sent empty counts as missing.
    IF reason IS NULL AND _identify.kind IN ('github', 'standardwebhooks', 'shopify', 'linear') THEN
        IF external_id = '' THEN
            reason := 'idempotency key missing';
        ELSIF NOT webhooks._valid_text(external_id) THEN
            reason := 'idempotency key invalid';
        END IF;
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
