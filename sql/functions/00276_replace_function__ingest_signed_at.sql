-- +goose Up
-- begin sql/src/ingest/_ingest_signed_at.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ingest_signed_at is ingest_signed() with the clock as an argument:
-- the 5-minute tolerance of the kinds that sign a timestamp is checked against
-- at (NULL: now()). ingest_signed() calls it with now(); test vectors call it
-- with the time they were signed at.
--
-- Whoever chooses the clock can replay any old delivery, so this function is
-- not granted to anyone and runs with its caller's rights (SECURITY INVOKER):
-- to use it a role must be able to execute it and read
-- webhooks.provider_secrets itself, that is, be the owner (who could sign
-- anything anyway). Privileges of the current role decide, so SET ROLE, a
-- session user's rights or a pooler's login role change nothing.
--
-- A delivery that is refused writes nothing and raises an exception whose
-- message is exactly 'pginbox: <reason>', the reason strings of the runner:
--   28000 invalid_authorization_specification (the runner's 401):
--         signature missing|malformed|mismatch, timestamp missing|malformed|out of
--         tolerance, signature header too large, too many signatures, too many
--         asymmetric signatures
--   22023 invalid_parameter_value (the runner's 400):
--         body not json, body nested too deep, idempotency key missing|invalid,
--         event id mismatch, event type missing|invalid, headers too large
--   42704 undefined_object (the runner's 404): unknown provider
-- The message of 42704 is 'pginbox: unknown provider "<name>"'. Misuse names
-- the argument instead: NULL provider/headers/body 22004; headers that are not
-- an object of strings, an infinite at 22023; a database that is not UTF8 0A000.
--
-- What one unauthenticated call can cost is bounded, cheapest check first:
-- the headers object at most 65536 bytes; the kind's signature header at most
-- 4096 bytes, 8 signatures and, for standardwebhooks, 2 v1a (Ed25519) entries
-- (webhooks._signature_bounds, whose refusals name the limit in DETAIL); then
-- the signature header and the timestamp are parsed, and a timestamp more
-- than 5 minutes from at is refused before any HMAC or Ed25519 verification
-- (webhooks._verify_signature). A delivery within tolerance costs one HMAC
-- per secret and at most 2 Ed25519 verifications per whpk_ key.
--
-- Kind square signs its notification URL with the body: the URL is the one
-- set_provider stored with the provider's secrets.
--
-- A signed slack url_verification (Slack checking its Request URL) stores
-- nothing and returns one row (NULL, 'challenge'): the caller answers 200
-- {"challenge": <the body's challenge>}.
--
-- A key from a header the signature does not cover (_identify's unsigned_key,
-- which each kind's _identify_<kind> sets) is stored with the SHA-256 of the
-- raw body (ingest_webhook's body_sha256): a signed body already stored under
-- another key is a duplicate of that event, and a known key is never updated.
--
-- HMAC-SHA256 is webhooks._hmac_sha256 on the built-in sha256(), and Ed25519
-- (the v1a signatures of standardwebhooks) webhooks._ed25519_verify on
-- numeric and the built-in sha512(): no pgcrypto.
--
-- trace_parent (default NULL) is passed on to ingest_webhook (the caller's
-- W3C traceparent, stored with a new event).
CREATE OR REPLACE FUNCTION webhooks._ingest_signed_at(
    provider     text,
    headers      jsonb,
    body         bytea,
    at           timestamptz,
    trace_parent text DEFAULT NULL
)
RETURNS TABLE (event_id bigint, outcome text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    c_max_headers CONSTANT integer := 65536;
    v_kinds   text[];
    v_secrets text[];
    v_url     text;
    v_headers jsonb;
    v_reason  text;
    v_found   record;
    v_digest  bytea;
BEGIN
    PERFORM webhooks._require_text('provider', _ingest_signed_at.provider, 64);
    IF _ingest_signed_at.body IS NULL THEN
        RAISE EXCEPTION 'pginbox: body must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF _ingest_signed_at.at IS NOT NULL AND NOT pg_catalog.isfinite(_ingest_signed_at.at) THEN
        RAISE EXCEPTION 'pginbox: at must be a finite timestamp, got %', _ingest_signed_at.at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.getdatabaseencoding() <> 'UTF8' THEN
        RAISE EXCEPTION 'pginbox: ingest_signed needs a UTF8 database, this one is %',
            pg_catalog.getdatabaseencoding()
            USING ERRCODE = 'feature_not_supported';
    END IF;
    -- pg_column_size is the size of the value as passed: no parsing, no walk.
    IF pg_catalog.pg_column_size(_ingest_signed_at.headers) > c_max_headers THEN
        RAISE EXCEPTION 'pginbox: headers too large'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('the headers object is %s bytes; the limit is %s bytes',
                                             pg_catalog.pg_column_size(_ingest_signed_at.headers), c_max_headers);
    END IF;
    v_headers := webhooks._http_headers(_ingest_signed_at.headers);

    SELECT pg_catalog.array_agg(DISTINCT s.kind), pg_catalog.array_agg(s.secret ORDER BY s.created_at, s.secret),
           pg_catalog.min(s.url)
    INTO v_kinds, v_secrets, v_url
    FROM webhooks.provider_secrets AS s
    WHERE s.provider = _ingest_signed_at.provider;
    IF v_secrets IS NULL THEN
        RAISE EXCEPTION 'pginbox: unknown provider "%"', _ingest_signed_at.provider
            USING ERRCODE = 'undefined_object',
                  HINT = 'Configure it with webhooks.set_provider(provider, kind, secrets).';
    END IF;
    IF pg_catalog.cardinality(v_kinds) <> 1 THEN
        RAISE EXCEPTION 'pginbox: provider "%" has secrets of several kinds (%)',
            _ingest_signed_at.provider, pg_catalog.array_to_string(v_kinds, ', ')
            USING ERRCODE = 'data_exception',
                  HINT = 'Reset it with webhooks.set_provider(provider, kind, secrets).';
    END IF;

    v_reason := coalesce(webhooks._signature_bounds(v_kinds[1], v_headers),
                         webhooks._verify_signature(v_kinds[1], v_secrets, v_headers, _ingest_signed_at.body,
                                                    coalesce(_ingest_signed_at.at, pg_catalog.now()), v_url));
    IF v_reason IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: %', v_reason
            USING ERRCODE = 'invalid_authorization_specification',
                  DETAIL = pg_catalog.format('provider %s (kind %s)%s; the runner answers 401',
                      _ingest_signed_at.provider, v_kinds[1],
                      CASE v_reason  -- the limits of webhooks._signature_bounds
                          WHEN 'signature header too large' THEN ': the limit is 4096 bytes'
                          WHEN 'too many signatures' THEN ': the limit is 8 signatures'
                          WHEN 'too many asymmetric signatures' THEN ': the limit is 2 v1a (Ed25519) signatures'
                          ELSE ''
                      END);
    END IF;

    SELECT * INTO v_found FROM webhooks._identify(v_kinds[1], v_headers, _ingest_signed_at.body);
    IF v_found.reason IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: %', v_found.reason
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('provider %s (kind %s); the runner answers 400', _ingest_signed_at.provider, v_kinds[1]);
    END IF;

    IF v_found.external_id IS NULL THEN
        -- _identify found a handshake (slack's url_verification): answered, not stored.
        RETURN QUERY SELECT NULL::bigint, 'challenge'::text;
        RETURN;
    END IF;

    -- The key is a header the provider does not sign (the kind's
    -- _identify_<kind> says so): the signed body decides.
    IF v_found.unsigned_key THEN
        v_digest := pg_catalog.sha256(_ingest_signed_at.body);
    END IF;

    RETURN QUERY
    SELECT i.event_id, i.outcome
    FROM webhooks.ingest_webhook(_ingest_signed_at.provider, v_found.external_id, v_found.event_type,
                                 v_found.payload, 'webhook', false, v_digest,
                                 _ingest_signed_at.trace_parent) AS i;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks._ingest_signed_at(text, jsonb, bytea, timestamptz, text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks._ingest_signed_at(text, jsonb, bytea, timestamptz, text) IS
  'Private: webhooks.ingest_signed() with the tolerance clock as an argument (at, NULL = now()), for test vectors. '
  'Granted to no one and SECURITY INVOKER: only a role that may itself read webhooks.provider_secrets (the owner) '
  'can run it, whatever SET ROLE or session user. Raises ''pginbox: <reason>'' like ingest_signed. trace_parent '
  '(default NULL) is passed on to ingest_webhook.';
-- end sql/src/ingest/_ingest_signed_at.sql
