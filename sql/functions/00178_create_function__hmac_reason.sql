-- +goose Up
-- begin sql/src/verify/_hmac_reason.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._hmac_reason is the end every _verify_<kind> shares: the signed
-- timestamp first, then the HMACs. Returns NULL when ts_raw (NULL for the
-- kinds that sign no timestamp) is unix seconds within 5 minutes of at either
-- way and one of sigs is the HMAC-SHA256 of msg under one of the keys; else,
-- in this order, timestamp missing | timestamp malformed | timestamp out of
-- tolerance | signature mismatch. The timestamp is checked before any HMAC,
-- so a stale delivery costs no HMAC whatever its signatures.
-- keys are the secrets' UTF-8 bytes unless given (standardwebhooks decodes
-- its whsec_ secrets); an empty or NULL key never matches. No MAC is
-- computed when sigs is empty. MACs are compared with _equal_ct.
CREATE OR REPLACE FUNCTION webhooks._hmac_reason(
    secrets text[],
    msg     bytea,
    sigs    bytea[],
    ts_raw  text,
    at      timestamptz,
    keys    bytea[] DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
DECLARE
    v_key bytea;
    v_mac bytea;
    v_sig bytea;
BEGIN
    IF _hmac_reason.ts_raw IS NOT NULL THEN
        -- Unix seconds as 1 to 18 decimal digits: no sign, no space, no fraction.
        IF _hmac_reason.ts_raw = '' THEN
            RETURN 'timestamp missing';
        END IF;
        IF pg_catalog.octet_length(_hmac_reason.ts_raw) > 18 OR _hmac_reason.ts_raw !~ '^[0-9]+$' THEN
            RETURN 'timestamp malformed';
        END IF;
        IF pg_catalog.abs(pg_catalog.floor(EXTRACT(epoch FROM _hmac_reason.at))::bigint - _hmac_reason.ts_raw::bigint) > 300 THEN
            RETURN 'timestamp out of tolerance';
        END IF;
    END IF;
    IF pg_catalog.cardinality(_hmac_reason.sigs) > 0 THEN
        FOREACH v_key IN ARRAY coalesce(_hmac_reason.keys,
                ARRAY(SELECT pg_catalog.convert_to(s.secret, 'UTF8')
                      FROM pg_catalog.unnest(_hmac_reason.secrets) WITH ORDINALITY AS s(secret, n)
                      ORDER BY s.n)) LOOP
            CONTINUE WHEN v_key IS NULL OR v_key = ''::bytea;  -- unusable secret: never matches
            v_mac := webhooks._hmac_sha256(v_key, _hmac_reason.msg);
            FOREACH v_sig IN ARRAY _hmac_reason.sigs LOOP
                IF webhooks._equal_ct(v_mac, v_sig) THEN
                    RETURN NULL;
                END IF;
            END LOOP;
        END LOOP;
    END IF;
    RETURN 'signature mismatch';
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._hmac_reason(text[], bytea, bytea[], text, timestamptz, bytea[]) IS
  'Private (_verify_<kind>): NULL when ts_raw (NULL: none signed) is unix seconds within 5 minutes of at and one of '
  'sigs is the HMAC-SHA256 of msg under one of the keys (the secrets'' UTF-8 bytes unless keys is given); else '
  'timestamp missing|malformed|out of tolerance (checked first, before any HMAC) or signature mismatch.';
REVOKE EXECUTE ON FUNCTION webhooks._hmac_reason(text[], bytea, bytea[], text, timestamptz, bytea[]) FROM PUBLIC;
-- end sql/src/verify/_hmac_reason.sql
