-- +goose StatementBegin
-- webhooks._verify_signature is the runner's Provider.Verify in SQL: it checks
-- the signature of one delivery (normalised headers, exact raw body bytes)
-- against the secrets of a provider kind and returns NULL when it is valid,
-- else the runner's reason, checked in the runner's order:
--
--   signature missing | signature malformed | timestamp missing |
--   timestamp malformed | timestamp out of tolerance | signature mismatch
--
-- Everything before the mismatch is parsing and comparing: a delivery signed
-- more than 5 minutes before or after at is refused before any HMAC or
-- Ed25519 verification, whatever its signatures, so a caller cannot make a
-- stale delivery cost more than that (an Ed25519 verification costs
-- milliseconds here, far more than an HMAC). Linear is the exception: its
-- timestamp is inside the signed body, read only once the one HMAC matched.
-- Kinds (the same rules as the runner's verifier of each kind):
--   sume              X-Sume-Signature: v1=<hex> entries (comma/space separated)
--                     over "<X-Sume-Timestamp>.<body>"; 5 minutes either way
--   stripe            Stripe-Signature: t=<ts>,v1=<hex>[,v1=...] over "<t>.<body>";
--                     two different t values are malformed; 5 minutes either way
--   github            X-Hub-Signature-256: sha256=<hex> over the body
--   standardwebhooks  webhook-signature: v1,<base64> entries (space separated) over
--                     "<webhook-id>.<webhook-timestamp>.<body>", key = base64 of the
--                     secret after "whsec_"; 5 minutes either way. v1a,<base64>
--                     entries are Ed25519 signatures of the same, verified with the
--                     whpk_ public keys among the secrets (_ed25519_verify), only
--                     when no v1 entry matched a whsec_ secret; at most 2 v1a
--                     entries reach here (_signature_bounds), so a delivery costs
--                     at most 2 verifications per whpk_ key
--   shopify           X-Shopify-Hmac-Sha256: <base64> over the body
--   paddle            Paddle-Signature: ts=<ts>;h1=<hex>[;h1=...] over "<ts>:<body>";
--                     two different ts values are malformed; 5 minutes either way
--   slack             X-Slack-Signature: v0=<hex> over
--                     "v0:<X-Slack-Request-Timestamp>:<body>"; 5 minutes either way
--   linear            Linear-Signature: <hex> over the body; then the body's top-level
--                     webhookTimestamp (unix milliseconds, a JSON integer), read only
--                     once the signature matched: missing, malformed, or more than 5
--                     minutes from at either way; a body that is not a JSON object has
--                     none to read and is left to _identify (body not json)
--   square            X-Square-HmacSha256-Signature: <base64> over "<url><body>",
--                     url being the notification URL registered at Square
-- Every secret is tried (rotation); MACs are compared with _equal_ct. Nothing
-- here raises on a delivery, and the reasons never carry a header, the body,
-- a secret or a computed MAC.
CREATE OR REPLACE FUNCTION webhooks._verify_signature(
    kind    text,
    secrets text[],
    headers jsonb,
    body    bytea,
    at      timestamptz,
    url     text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
DECLARE
    -- Go's unicode.IsSpace as the inside of a regular-expression bracket
    -- expression: what strings.TrimSpace, Fields and FieldsFunc split on.
    c_ws     CONSTANT text := E'\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
    c_hex64  CONSTANT text := '^[0-9A-Fa-f]{64}$';
    v_header  text;
    v_entry   text;
    v_entries integer := 0;
    v_pos     integer;
    v_sigs    bytea[] := '{}';
    v_asigs   bytea[] := '{}';  -- standardwebhooks v1a (Ed25519) signatures
    v_pubs    bytea[];
    v_sig     bytea;
    v_ts_raw  text;     -- NULL for the kinds that sign no timestamp
    v_ts_seen boolean := false;
    v_ts      bigint;
    v_prefix  text := '';
    v_keys    bytea[];
    v_key     bytea;
    v_msg     bytea;
    v_mac     bytea;
    v_match   boolean := false;
    v_member  json;
    v_ms      bigint;
BEGIN
    CASE _verify_signature.kind
    WHEN 'sume' THEN
        v_header := coalesce(_verify_signature.headers -> 'x-sume-signature' ->> 0, '');
        FOR v_entry IN
            SELECT e FROM pg_catalog.regexp_split_to_table(v_header, '[,' || c_ws || ']+') AS e WHERE e <> ''
        LOOP
            v_entries := v_entries + 1;
            IF pg_catalog.starts_with(v_entry, 'v1=') AND pg_catalog.substr(v_entry, 4) ~ c_hex64 THEN
                v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, 4), 'hex');
            END IF;
        END LOOP;
        IF v_entries = 0 THEN
            RETURN 'signature missing';
        END IF;
        IF pg_catalog.cardinality(v_sigs) = 0 THEN
            RETURN 'signature malformed';
        END IF;
        v_ts_raw := coalesce(_verify_signature.headers -> 'x-sume-timestamp' ->> 0, '');
        v_prefix := v_ts_raw || '.';

    WHEN 'stripe' THEN
        v_header := coalesce(_verify_signature.headers -> 'stripe-signature' ->> 0, '');
        IF v_header ~ ('^[' || c_ws || ']*$') THEN
            RETURN 'signature missing';
        END IF;
        FOREACH v_entry IN ARRAY pg_catalog.string_to_array(v_header, ',') LOOP
            v_entry := pg_catalog.regexp_replace(v_entry, '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
            v_pos := pg_catalog.strpos(v_entry, '=');
            CONTINUE WHEN v_pos = 0;
            IF pg_catalog.left(v_entry, v_pos - 1) = 't' THEN
                -- Which of two different t values was signed would be a guess.
                IF v_ts_seen AND pg_catalog.substr(v_entry, v_pos + 1) <> v_ts_raw COLLATE "C" THEN
                    RETURN 'timestamp malformed';
                END IF;
                v_ts_raw := pg_catalog.substr(v_entry, v_pos + 1);
                v_ts_seen := true;
            ELSIF pg_catalog.left(v_entry, v_pos - 1) = 'v1' AND pg_catalog.substr(v_entry, v_pos + 1) ~ c_hex64 THEN
                v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, v_pos + 1), 'hex');
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(v_sigs) = 0 THEN
            RETURN 'signature malformed';
        END IF;
        IF NOT v_ts_seen THEN
            RETURN 'timestamp missing';
        END IF;
        IF v_ts_raw = '' THEN
            RETURN 'timestamp malformed';
        END IF;
        v_prefix := v_ts_raw || '.';

    WHEN 'github' THEN
        v_header := pg_catalog.regexp_replace(
            coalesce(_verify_signature.headers -> 'x-hub-signature-256' ->> 0, ''),
            '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        IF v_header = '' THEN
            RETURN 'signature missing';
        END IF;
        IF NOT pg_catalog.starts_with(v_header, 'sha256=') OR pg_catalog.substr(v_header, 8) !~ c_hex64 THEN
            RETURN 'signature malformed';
        END IF;
        v_sigs := ARRAY[pg_catalog.decode(pg_catalog.substr(v_header, 8), 'hex')];

    WHEN 'standardwebhooks' THEN
        v_header := coalesce(_verify_signature.headers -> 'webhook-signature' ->> 0, '');
        FOR v_entry IN
            SELECT e FROM pg_catalog.regexp_split_to_table(v_header, '[' || c_ws || ']+') AS e WHERE e <> ''
        LOOP
            v_entries := v_entries + 1;
            v_pos := pg_catalog.strpos(v_entry, ',');
            -- Entries of other versions are skipped.
            IF v_pos > 0 AND pg_catalog.left(v_entry, v_pos - 1) = 'v1'
               AND pg_catalog.substr(v_entry, v_pos + 1) ~ '^[A-Za-z0-9+/]{43}=$' THEN
                v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, v_pos + 1), 'base64');
            ELSIF v_pos > 0 AND pg_catalog.left(v_entry, v_pos - 1) = 'v1a'
               AND pg_catalog.substr(v_entry, v_pos + 1) ~ '^[A-Za-z0-9+/]{86}==$' THEN
                v_asigs := v_asigs || pg_catalog.decode(pg_catalog.substr(v_entry, v_pos + 1), 'base64');
            END IF;
        END LOOP;
        IF v_entries = 0 THEN
            RETURN 'signature missing';
        END IF;
        IF pg_catalog.cardinality(v_sigs) = 0 AND pg_catalog.cardinality(v_asigs) = 0 THEN
            RETURN 'signature malformed';
        END IF;
        v_ts_raw := coalesce(_verify_signature.headers -> 'webhook-timestamp' ->> 0, '');
        -- A missing webhook-id is signed as empty; _identify() then refuses
        -- the delivery for its missing idempotency key.
        v_prefix := coalesce(_verify_signature.headers -> 'webhook-id' ->> 0, '') || '.' || v_ts_raw || '.';

    WHEN 'shopify' THEN
        v_header := pg_catalog.regexp_replace(
            coalesce(_verify_signature.headers -> 'x-shopify-hmac-sha256' ->> 0, ''),
            '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        IF v_header = '' THEN
            RETURN 'signature missing';
        END IF;
        v_sig := webhooks._base64_decode(v_header, true);
        IF v_sig IS NULL OR pg_catalog.octet_length(v_sig) <> 32 THEN
            RETURN 'signature malformed';
        END IF;
        v_sigs := ARRAY[v_sig];

    WHEN 'paddle' THEN
        v_header := coalesce(_verify_signature.headers -> 'paddle-signature' ->> 0, '');
        IF v_header ~ ('^[' || c_ws || ']*$') THEN
            RETURN 'signature missing';
        END IF;
        FOREACH v_entry IN ARRAY pg_catalog.string_to_array(v_header, ';') LOOP
            v_entry := pg_catalog.regexp_replace(v_entry, '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
            v_pos := pg_catalog.strpos(v_entry, '=');
            CONTINUE WHEN v_pos = 0;
            IF pg_catalog.left(v_entry, v_pos - 1) = 'ts' THEN
                -- Which of two different ts values was signed would be a guess.
                IF v_ts_seen AND pg_catalog.substr(v_entry, v_pos + 1) <> v_ts_raw COLLATE "C" THEN
                    RETURN 'timestamp malformed';
                END IF;
                v_ts_raw := pg_catalog.substr(v_entry, v_pos + 1);
                v_ts_seen := true;
            ELSIF pg_catalog.left(v_entry, v_pos - 1) = 'h1' AND pg_catalog.substr(v_entry, v_pos + 1) ~ c_hex64 THEN
                v_sigs := v_sigs || pg_catalog.decode(pg_catalog.substr(v_entry, v_pos + 1), 'hex');
            END IF;
        END LOOP;
        IF pg_catalog.cardinality(v_sigs) = 0 THEN
            RETURN 'signature malformed';
        END IF;
        IF NOT v_ts_seen THEN
            RETURN 'timestamp missing';
        END IF;
        IF v_ts_raw = '' THEN
            RETURN 'timestamp malformed';
        END IF;
        v_prefix := v_ts_raw || ':';
    WHEN 'slack' THEN
        v_header := pg_catalog.regexp_replace(
            coalesce(_verify_signature.headers -> 'x-slack-signature' ->> 0, ''),
            '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        IF v_header = '' THEN
            RETURN 'signature missing';
        END IF;
        IF NOT pg_catalog.starts_with(v_header, 'v0=') OR pg_catalog.substr(v_header, 4) !~ c_hex64 THEN
            RETURN 'signature malformed';
        END IF;
        v_sigs := ARRAY[pg_catalog.decode(pg_catalog.substr(v_header, 4), 'hex')];
        v_ts_raw := coalesce(_verify_signature.headers -> 'x-slack-request-timestamp' ->> 0, '');
        v_prefix := 'v0:' || v_ts_raw || ':';

    WHEN 'linear' THEN
        v_header := pg_catalog.regexp_replace(
            coalesce(_verify_signature.headers -> 'linear-signature' ->> 0, ''),
            '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        IF v_header = '' THEN
            RETURN 'signature missing';
        END IF;
        IF v_header !~ c_hex64 THEN
            RETURN 'signature malformed';
        END IF;
        v_sigs := ARRAY[pg_catalog.decode(v_header, 'hex')];

    WHEN 'square' THEN
        IF _verify_signature.url IS NULL THEN
            RAISE EXCEPTION 'pginbox: provider kind square needs its notification URL'
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Configure it with webhooks.set_provider(provider, ''square'', secrets, url).';
        END IF;
        v_header := pg_catalog.regexp_replace(
            coalesce(_verify_signature.headers -> 'x-square-hmacsha256-signature' ->> 0, ''),
            '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g');
        IF v_header = '' THEN
            RETURN 'signature missing';
        END IF;
        v_sig := webhooks._base64_decode(v_header, true);
        IF v_sig IS NULL OR pg_catalog.octet_length(v_sig) <> 32 THEN
            RETURN 'signature malformed';
        END IF;
        v_sigs := ARRAY[v_sig];
        v_prefix := _verify_signature.url;

    ELSE
        RAISE EXCEPTION 'pginbox: unknown provider kind "%"', _verify_signature.kind
            USING ERRCODE = 'invalid_parameter_value';
    END CASE;

    IF v_ts_raw IS NOT NULL THEN
        -- Unix seconds as 1 to 18 decimal digits: no sign, no space, no fraction.
        IF v_ts_raw = '' THEN
            RETURN 'timestamp missing';
        END IF;
        IF pg_catalog.octet_length(v_ts_raw) > 18 OR v_ts_raw !~ '^[0-9]+$' THEN
            RETURN 'timestamp malformed';
        END IF;
        v_ts := v_ts_raw::bigint;
        IF pg_catalog.abs(pg_catalog.floor(EXTRACT(epoch FROM _verify_signature.at))::bigint - v_ts) > 300 THEN
            RETURN 'timestamp out of tolerance';
        END IF;
    END IF;

    IF _verify_signature.kind = 'standardwebhooks' THEN
        v_keys := ARRAY(SELECT webhooks._whsec_key(s.secret)
                        FROM pg_catalog.unnest(_verify_signature.secrets) WITH ORDINALITY AS s(secret, n)
                        WHERE NOT pg_catalog.starts_with(s.secret, 'whpk_')
                        ORDER BY s.n);
        v_pubs := ARRAY(SELECT webhooks._whpk_key(s.secret)
                        FROM pg_catalog.unnest(_verify_signature.secrets) WITH ORDINALITY AS s(secret, n)
                        WHERE pg_catalog.starts_with(s.secret, 'whpk_')
                        ORDER BY s.n);
    ELSE
        v_keys := ARRAY(SELECT pg_catalog.convert_to(s.secret, 'UTF8')
                        FROM pg_catalog.unnest(_verify_signature.secrets) WITH ORDINALITY AS s(secret, n)
                        ORDER BY s.n);
    END IF;

    v_msg := pg_catalog.convert_to(v_prefix, 'UTF8') || _verify_signature.body;
    -- A MAC only when there is a signature to compare it with (a header of
    -- v1a entries alone has none).
    IF pg_catalog.cardinality(v_sigs) > 0 THEN
        <<secrets>>
        FOREACH v_key IN ARRAY v_keys LOOP
            CONTINUE WHEN v_key IS NULL OR v_key = ''::bytea;  -- unusable secret: never matches
            v_mac := webhooks._hmac_sha256(v_key, v_msg);
            FOREACH v_sig IN ARRAY v_sigs LOOP
                IF webhooks._equal_ct(v_mac, v_sig) THEN
                    v_match := true;
                    EXIT secrets;
                END IF;
            END LOOP;
        END LOOP;
    END IF;
    -- Ed25519 costs far more than an HMAC: tried only when no v1 matched.
    IF NOT v_match AND pg_catalog.cardinality(v_asigs) > 0 THEN
        <<pubs>>
        FOREACH v_key IN ARRAY coalesce(v_pubs, '{}') LOOP
            CONTINUE WHEN v_key IS NULL;
            FOREACH v_sig IN ARRAY v_asigs LOOP
                IF webhooks._ed25519_verify(v_key, v_msg, v_sig) THEN
                    v_match := true;
                    EXIT pubs;
                END IF;
            END LOOP;
        END LOOP;
    END IF;
    IF NOT v_match THEN
        RETURN 'signature mismatch';
    END IF;

    IF _verify_signature.kind = 'linear' THEN
        -- The timestamp is inside the signed body: its top-level member, the
        -- last one when the name is given twice (as Go's encoding/json), as
        -- written (json, not jsonb, which would turn 17e11 into digits). A
        -- body jsonb refuses (not UTF-8 or JSON, \u0000, ...) or that is
        -- not an object has none to read: _identify refuses it (body not json).
        v_ms := NULL;
        BEGIN
            IF pg_catalog.jsonb_typeof(pg_catalog.convert_from(_verify_signature.body, 'UTF8')::jsonb) = 'object' THEN
                v_ms := 0;  -- an object: its timestamp is checked
                SELECT m.value INTO v_member
                FROM pg_catalog.json_each(pg_catalog.convert_from(_verify_signature.body, 'UTF8')::json)
                     WITH ORDINALITY AS m(key, value, n)
                WHERE m.key = 'webhookTimestamp'
                ORDER BY m.n DESC
                LIMIT 1;
            END IF;
        EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            v_ms := NULL;
        END;
        IF v_ms IS NULL THEN
            RETURN NULL;
        END IF;
        IF v_member IS NULL OR pg_catalog.json_typeof(v_member) = 'null' THEN
            RETURN 'timestamp missing';
        END IF;
        IF v_member::text !~ '^[0-9]{1,18}$' THEN
            RETURN 'timestamp malformed';
        END IF;
        v_ms := v_member::text::bigint;
        IF pg_catalog.abs(pg_catalog.floor(EXTRACT(epoch FROM _verify_signature.at) * 1000)::bigint - v_ms) > 300000 THEN
            RETURN 'timestamp out of tolerance';
        END IF;
    END IF;

    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_signature(text, text[], jsonb, bytea, timestamptz, text) IS
  'Private: the runner''s Provider.Verify in SQL. Returns NULL when the signature of (headers, body) '
  'verifies with any of the secrets for the provider kind (and a signed timestamp is within 5 minutes '
  'of at), else the runner''s reason: signature missing|malformed|mismatch, timestamp missing|malformed|out of tolerance. '
  'url: the notification URL kind square signs before the body.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_signature(text, text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
