-- +goose Up
-- +goose StatementBegin
-- webhooks.ingest_signed is ingest_webhook() for stacks with no verifier of
-- their own (PostgREST, an edge function, a cron job): it verifies the
-- signature of a raw delivery inside Postgres with the provider's secrets from
-- webhooks.provider_secrets, extracts the idempotency key and event type with
-- the runner's rules for the provider's kind, then calls ingest_webhook().
--
-- SECURITY DEFINER with a pinned search_path: a role granted EXECUTE can
-- verify with the secrets but cannot read them. Everything inside is
-- schema-qualified.
--
-- A delivery that is refused writes nothing and raises an exception whose
-- message is exactly 'pginbox: <reason>', the reason strings of the runner:
--   28000 invalid_authorization_specification (the runner's 401):
--         signature missing|malformed|mismatch, timestamp missing|malformed|out of tolerance
--   22023 invalid_parameter_value (the runner's 400):
--         body not json, body nested too deep, idempotency key missing|invalid,
--         event id mismatch, event type missing|invalid
--   42704 undefined_object (the runner's 404): unknown provider
-- The message of 42704 is 'pginbox: unknown provider "<name>"'. Misuse names
-- the argument instead: NULL provider/headers/body 22004; headers that are not
-- an object of strings, an infinite at 22023; at from a role that may not pass
-- it 42501; a database that is not UTF8 0A000.
--
-- HMAC-SHA256 is webhooks._hmac_sha256 on the built-in sha256(): no pgcrypto.
--
-- at is the clock the 5-minute tolerance is checked against: NULL (the
-- default) means now(). Only a session user that may read the secrets anyway
-- (and so could sign anything) may pass another time; anyone else could
-- otherwise replay an old delivery by turning the clock back.
CREATE OR REPLACE FUNCTION webhooks.ingest_signed(
    provider text,
    headers  jsonb,
    body     bytea,
    at       timestamptz DEFAULT NULL
)
RETURNS TABLE (event_id bigint, outcome text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_kinds   text[];
    v_secrets text[];
    v_headers jsonb;
    v_reason  text;
    v_found   record;
BEGIN
    PERFORM webhooks._require_text('provider', ingest_signed.provider, 64);
    IF ingest_signed.body IS NULL THEN
        RAISE EXCEPTION 'pginbox: body must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF ingest_signed.at IS NOT NULL THEN
        IF NOT pg_catalog.isfinite(ingest_signed.at) THEN
            RAISE EXCEPTION 'pginbox: at must be a finite timestamp, got %', ingest_signed.at
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT pg_catalog.has_table_privilege(session_user, 'webhooks.provider_secrets', 'SELECT') THEN
            RAISE EXCEPTION 'pginbox: only a role that may read webhooks.provider_secrets may pass at'
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Leave at out (NULL): deliveries are checked against now().';
        END IF;
    END IF;
    IF pg_catalog.getdatabaseencoding() <> 'UTF8' THEN
        RAISE EXCEPTION 'pginbox: ingest_signed needs a UTF8 database, this one is %',
            pg_catalog.getdatabaseencoding()
            USING ERRCODE = 'feature_not_supported';
    END IF;
    v_headers := webhooks._http_headers(ingest_signed.headers);

    SELECT pg_catalog.array_agg(DISTINCT s.kind), pg_catalog.array_agg(s.secret ORDER BY s.created_at, s.secret)
    INTO v_kinds, v_secrets
    FROM webhooks.provider_secrets AS s
    WHERE s.provider = ingest_signed.provider;
    IF v_secrets IS NULL THEN
        RAISE EXCEPTION 'pginbox: unknown provider "%"', ingest_signed.provider
            USING ERRCODE = 'undefined_object',
                  HINT = 'Configure it with webhooks.set_provider(provider, kind, secrets).';
    END IF;
    IF pg_catalog.cardinality(v_kinds) <> 1 THEN
        RAISE EXCEPTION 'pginbox: provider "%" has secrets of several kinds (%)',
            ingest_signed.provider, pg_catalog.array_to_string(v_kinds, ', ')
            USING ERRCODE = 'data_exception',
                  HINT = 'Reset it with webhooks.set_provider(provider, kind, secrets).';
    END IF;

    v_reason := webhooks._verify_signature(v_kinds[1], v_secrets, v_headers, ingest_signed.body,
                                           coalesce(ingest_signed.at, pg_catalog.now()));
    IF v_reason IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: %', v_reason
            USING ERRCODE = 'invalid_authorization_specification',
                  DETAIL = pg_catalog.format('provider %s (kind %s); the runner answers 401', ingest_signed.provider, v_kinds[1]);
    END IF;

    SELECT * INTO v_found FROM webhooks._identify(v_kinds[1], v_headers, ingest_signed.body);
    IF v_found.reason IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: %', v_found.reason
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('provider %s (kind %s); the runner answers 400', ingest_signed.provider, v_kinds[1]);
    END IF;

    RETURN QUERY
    SELECT i.event_id, i.outcome
    FROM webhooks.ingest_webhook(ingest_signed.provider, v_found.external_id, v_found.event_type, v_found.payload) AS i;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, timestamptz) IS
  'Verifies a raw webhook delivery inside Postgres and stores it: the provider''s signature over the exact '
  'body bytes with its secrets from webhooks.provider_secrets (rotation: any secret), key and event type by the '
  'runner''s rules for its kind (sume, stripe, github, standardwebhooks, shopify), then webhooks.ingest_webhook(). '
  'headers: JSON object of header name (any case) to string or array of strings. Returns (event_id, outcome) like '
  'ingest_webhook. A refused delivery writes nothing and raises ''pginbox: <reason>'' with SQLSTATE 28000 (the '
  'runner''s 401: signature/timestamp), 22023 (400: body, key, event id or type) or 42704 (404: unknown provider). '
  'at (default NULL = now()) moves the 5-minute tolerance clock, for test vectors; only roles that can read the '
  'secrets may pass it. HMAC-SHA256 is computed with the built-in sha256(): no pgcrypto or other extension. '
  'SECURITY DEFINER: grant EXECUTE (and USAGE on schema webhooks) to roles that ingest; they cannot read the secrets.';
