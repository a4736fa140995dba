-- +goose Up
-- begin sql/src/verify/_signature_bounds.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._signature_bounds caps the work one unauthenticated delivery can
-- make ingest_signed() do before any signature is computed. Every signature
-- found in the header is compared with the MAC of every secret, every v1a
-- (Ed25519) signature is verified with every whpk_ key, and the header is
-- split and decoded entry by entry, so an unbounded header means unbounded
-- work. Refused, with the reason returned (NULL when within bounds):
--   signature header too large  the first value of the kind's signature
--                               header is over 4096 bytes
--   too many signatures         it holds more than 8 signatures: entries of
--                               the X-Sume-Signature (comma/space separated) or
--                               webhook-signature (space separated) list, or
--                               entries other than t= of Stripe-Signature
--                               (ts= of Paddle-Signature, split on ";")
--   too many asymmetric         webhook-signature (standardwebhooks) has more
--   signatures                  than 2 entries labelled v1a, well-formed or not
-- Providers send one signature per active secret (two while rotating), so 8
-- leaves room and a real delivery never comes near either bound. An Ed25519
-- verification in SQL costs milliseconds (_ed25519_verify), so v1a
-- gets the tight bound: the Standard Webhooks specification signs with the
-- current key and, while rotating, the previous one, that is at most two.
-- GitHub, Shopify, Slack, Linear and Square carry a single signature; only
-- the size applies to them.
CREATE OR REPLACE FUNCTION webhooks._signature_bounds(kind text, headers jsonb)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The whitespace _verify_signature splits on (Go's unicode.IsSpace).
    c_ws        CONSTANT text := webhooks._space_class();
    c_max_bytes CONSTANT integer := 4096;
    c_max_sigs  CONSTANT integer := 8;
    c_max_v1a   CONSTANT integer := 2;
    v_value     text;
    v_sigs      bigint := 0;
    v_v1a       bigint := 0;
BEGIN
    v_value := _signature_bounds.headers -> (CASE _signature_bounds.kind
        WHEN 'sume'             THEN 'x-sume-signature'
        WHEN 'stripe'           THEN 'stripe-signature'
        WHEN 'github'           THEN 'x-hub-signature-256'
        WHEN 'standardwebhooks' THEN 'webhook-signature'
        WHEN 'shopify'          THEN 'x-shopify-hmac-sha256'
        WHEN 'paddle'           THEN 'paddle-signature'
        WHEN 'slack'            THEN 'x-slack-signature'
        WHEN 'linear'           THEN 'linear-signature'
        WHEN 'square'           THEN 'x-square-hmacsha256-signature'
    END) ->> 0;
    IF v_value IS NULL THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.octet_length(v_value) > c_max_bytes THEN
        RETURN 'signature header too large';
    END IF;
    CASE _signature_bounds.kind
    WHEN 'sume' THEN
        SELECT pg_catalog.count(*) INTO v_sigs
        FROM pg_catalog.regexp_split_to_table(v_value, '[,' || c_ws || ']+') AS e
        WHERE e <> '';
    WHEN 'stripe' THEN
        SELECT pg_catalog.count(*) INTO v_sigs
        FROM pg_catalog.unnest(pg_catalog.string_to_array(v_value, ',')) AS e
        WHERE pg_catalog.regexp_replace(e, '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g') !~ '^(t=.*)?$';
    WHEN 'paddle' THEN
        SELECT pg_catalog.count(*) INTO v_sigs
        FROM pg_catalog.unnest(pg_catalog.string_to_array(v_value, ';')) AS e
        WHERE pg_catalog.regexp_replace(e, '^[' || c_ws || ']+|[' || c_ws || ']+$', '', 'g') !~ '^(ts=.*)?$';
    WHEN 'standardwebhooks' THEN
        -- "v1a," starts exactly the entries whose version (before the first
        -- comma) is v1a.
        SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE pg_catalog.starts_with(e, 'v1a,'))
        INTO v_sigs, v_v1a
        FROM pg_catalog.regexp_split_to_table(v_value, '[' || c_ws || ']+') AS e
        WHERE e <> '';
    ELSE
        v_sigs := 1;
    END CASE;
    IF v_sigs > c_max_sigs THEN
        RETURN 'too many signatures';
    END IF;
    IF v_v1a > c_max_v1a THEN
        RETURN 'too many asymmetric signatures';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks._signature_bounds(text, jsonb) FROM PUBLIC;

COMMENT ON FUNCTION webhooks._signature_bounds(text, jsonb) IS
  'Private (ingest_signed): NULL when the kind''s signature header of the normalised headers is within bounds, '
  'else the reason: signature header too large (over 4096 bytes), too many signatures (over 8) or too many '
  'asymmetric signatures (standardwebhooks: over 2 v1a entries). Checked before any HMAC or Ed25519 verification, '
  'so one unauthenticated delivery cannot make verification do unbounded work.';
-- end sql/src/verify/_signature_bounds.sql
