-- +goose Up
-- begin sql/src/verify/_verify_standardwebhooks.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._verify_standardwebhooks is the runner's standardwebhooks verifier in SQL, called by
-- _verify_signature: NULL when the delivery's signature is valid for one of
-- the secrets, else the runner's reason, in the runner's order (signature
-- missing | malformed, then the timestamp, before any HMAC, then signature
-- mismatch). Nothing here raises on a delivery; no reason carries a header,
-- the body, a secret or a computed MAC.
-- webhook-signature: v1,<base64> entries (space separated) over
-- "<webhook-id>.<webhook-timestamp>.<body>", the HMAC key being the base64 of
-- a secret after "whsec_"; the timestamp within 5 minutes either way. v1a,<base64>
-- entries are Ed25519 signatures of the same, verified with the whpk_ public
-- keys among the secrets (_ed25519_verify), only when no v1 entry matched a
-- whsec_ secret, and only once the timestamp passed; at most 2 v1a entries
-- reach here (_signature_bounds), so a delivery costs at most 2 verifications
-- per whpk_ key. Entries of other versions are skipped.
CREATE OR REPLACE FUNCTION webhooks._verify_standardwebhooks(
    secrets text[],
    headers jsonb,
    body    bytea,
    at      timestamptz,
    url     text
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
DECLARE
    -- Go's unicode.IsSpace as the inside of a bracket expression (what
    -- strings.TrimSpace and Fields split on).
    c_ws     CONSTANT text := webhooks._space_class();
    v_entry   text;
    v_entries integer := 0;
    v_pos     integer;
    v_sigs    bytea[] := '{}';
    v_asigs   bytea[] := '{}';
    v_ts_raw  text;
    v_msg     bytea;
    v_reason  text;
    v_key     bytea;
    v_sig     bytea;
BEGIN
    FOR v_entry IN
        SELECT e FROM pg_catalog.regexp_split_to_table(
            coalesce(_verify_standardwebhooks.headers -> 'webhook-signature' ->> 0, ''), '[' || c_ws || ']+') AS e
        WHERE e <> ''
    LOOP
        v_entries := v_entries + 1;
        v_pos := pg_catalog.strpos(v_entry, ',');
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
    v_ts_raw := coalesce(_verify_standardwebhooks.headers -> 'webhook-timestamp' ->> 0, '');
    -- A missing webhook-id is signed as empty; _identify_standardwebhooks then
    -- refuses the delivery for its missing idempotency key.
    v_msg := pg_catalog.convert_to(
        coalesce(_verify_standardwebhooks.headers -> 'webhook-id' ->> 0, '') || '.' || v_ts_raw || '.', 'UTF8')
        || _verify_standardwebhooks.body;
    v_reason := webhooks._hmac_reason(_verify_standardwebhooks.secrets, v_msg, v_sigs, v_ts_raw, _verify_standardwebhooks.at,
        ARRAY(SELECT webhooks._whsec_key(s.secret)
              FROM pg_catalog.unnest(_verify_standardwebhooks.secrets) WITH ORDINALITY AS s(secret, n)
              WHERE NOT pg_catalog.starts_with(s.secret, 'whpk_')
              ORDER BY s.n));
    -- Ed25519 costs far more than an HMAC: tried only when no v1 matched and
    -- the timestamp passed (a timestamp reason is returned as it is).
    IF v_reason IS DISTINCT FROM 'signature mismatch' OR pg_catalog.cardinality(v_asigs) = 0 THEN
        RETURN v_reason;
    END IF;
    FOR v_key IN
        SELECT webhooks._whpk_key(s.secret)
        FROM pg_catalog.unnest(_verify_standardwebhooks.secrets) WITH ORDINALITY AS s(secret, n)
        WHERE pg_catalog.starts_with(s.secret, 'whpk_')
        ORDER BY s.n
    LOOP
        CONTINUE WHEN v_key IS NULL;
        FOREACH v_sig IN ARRAY v_asigs LOOP
            IF webhooks._ed25519_verify(v_key, v_msg, v_sig) THEN
                RETURN NULL;
            END IF;
        END LOOP;
    END LOOP;
    RETURN 'signature mismatch';
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._verify_standardwebhooks(text[], jsonb, bytea, timestamptz, text) IS
  'Private (_verify_signature): the standardwebhooks signature: webhook-signature v1,<base64> (HMAC, whsec_ secrets) and v1a,<base64> (Ed25519, whpk_ keys, tried only when no v1 matched) over "<webhook-id>.<webhook-timestamp>.<body>", 5 minutes either way. '
  'NULL when valid, else signature missing|malformed|mismatch or timestamp missing|malformed|out of tolerance.';
REVOKE EXECUTE ON FUNCTION webhooks._verify_standardwebhooks(text[], jsonb, bytea, timestamptz, text) FROM PUBLIC;
-- end sql/src/verify/_verify_standardwebhooks.sql
