-- +goose Up
-- webhooks._identify gains an OUT parameter, unsigned_key (the key is a header
-- the signature does not cover), which _ingest_signed_at reads instead of a
-- list of kinds. CREATE OR REPLACE cannot change a function's OUT
-- parameters: drop it first (private, granted to no one; only PL/pgSQL
-- bodies call it, which look it up when they run).
DROP FUNCTION webhooks._identify(text, jsonb, bytea);
-- begin sql/src/ingest/_identify.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify is the runner's Provider.Identify in SQL: for a verified
-- delivery, the key, the event type and the body as jsonb, or (all NULL) the
-- runner's reason for refusing it. _read_envelope reads the body; the kind's
-- webhooks._identify_<kind> (sql/src/ingest/_identify_<kind>.sql) picks the key
-- and the type, or refuses the key, and says whether the key is a header the
-- signature does not cover (unsigned_key); the type is checked here. No key and
-- no reason is a handshake (slack's url_verification): payload only. A CASE
-- branch per row of webhooks.provider_kinds (TestEveryKindIsComplete).
CREATE OR REPLACE FUNCTION webhooks._identify(kind text, headers jsonb, body bytea,
    OUT external_id text, OUT event_type text, OUT payload jsonb, OUT reason text, OUT unsigned_key boolean)
RETURNS record
LANGUAGE plpgsql
STABLE
PARALLEL UNSAFE
AS $$
DECLARE
    v_env record := webhooks._read_envelope(_identify.body);
    v_found record;
BEGIN
    IF v_env.reason IS NOT NULL THEN
        reason := v_env.reason;
        RETURN;
    END IF;
    CASE _identify.kind
    WHEN 'github'           THEN v_found := webhooks._identify_github(_identify.headers, v_env.payload, v_env.members);
    WHEN 'linear'           THEN v_found := webhooks._identify_linear(_identify.headers, v_env.payload, v_env.members);
    WHEN 'paddle'           THEN v_found := webhooks._identify_paddle(_identify.headers, v_env.payload, v_env.members);
    WHEN 'shopify'          THEN v_found := webhooks._identify_shopify(_identify.headers, v_env.payload, v_env.members);
    WHEN 'slack'            THEN v_found := webhooks._identify_slack(_identify.headers, v_env.payload, v_env.members);
    WHEN 'square'           THEN v_found := webhooks._identify_square(_identify.headers, v_env.payload, v_env.members);
    WHEN 'standardwebhooks' THEN v_found := webhooks._identify_standardwebhooks(_identify.headers, v_env.payload, v_env.members);
    WHEN 'stripe'           THEN v_found := webhooks._identify_stripe(_identify.headers, v_env.payload, v_env.members);
    WHEN 'sume'             THEN v_found := webhooks._identify_sume(_identify.headers, v_env.payload, v_env.members);
    ELSE
        RAISE EXCEPTION 'pginbox: unknown provider kind "%"', _identify.kind
            USING ERRCODE = 'invalid_parameter_value';
    END CASE;
    reason := coalesce(v_found.reason, CASE
        WHEN v_found.external_id IS NULL THEN NULL  -- a handshake
        WHEN v_found.event_type = '' THEN 'event type missing'
        WHEN NOT webhooks._valid_text(v_found.event_type) THEN 'event type invalid' END);
    IF reason IS NULL THEN
        external_id := v_found.external_id;
        event_type := v_found.event_type;  -- NULL in a handshake
        payload := v_env.payload;
        unsigned_key := v_found.unsigned_key;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify(text, jsonb, bytea) IS
  'Private: the runner''s Provider.Identify in SQL. For a verified delivery returns (external_id, '
  'event_type, payload, unsigned_key) by the kind''s rules, or only reason: body not json, body nested too '
  'deep, idempotency key missing|invalid, event id mismatch, event type missing|invalid.';
REVOKE EXECUTE ON FUNCTION webhooks._identify(text, jsonb, bytea) FROM PUBLIC;
-- end sql/src/ingest/_identify.sql
