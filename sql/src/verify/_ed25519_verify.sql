-- +goose StatementBegin
-- webhooks._ed25519_verify checks an Ed25519 signature (RFC 8032 section
-- 5.1.7, PureEdDSA) of msg under the 32-byte public key pub, the way Go's
-- crypto/ed25519.Verify does, so the SQL verifier accepts the same v1a
-- signatures of Standard Webhooks as the runner. pgcrypto has no Ed25519:
-- the arithmetic is numeric modulo p = 2^255 - 19 and the hash the built-in
-- sha512(). Refused (false): a key or signature of the wrong length, S with
-- any of its top three bits set or not below the group order L, a key that
-- is not a point of the curve; else true exactly when the encoding of
-- [S]B - [k]A, k = SHA-512(R || A || msg) mod L, is the signature's R.
-- Decoding A reduces y modulo p and takes x = 0 whatever its sign bit, as
-- Go's does. It costs tens of milliseconds per call (numeric, not constant
-- time: every input is public), so _verify_signature tries the HMAC secrets
-- first, only for a timestamp within tolerance, and calls it at most twice
-- per public key (_signature_bounds refuses more than 2 v1a entries). Never
-- raises.
CREATE OR REPLACE FUNCTION webhooks._ed25519_verify(pub bytea, msg bytea, sig bytea)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    c_p      CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
    c_l      CONSTANT numeric := 7237005577332262213973186563042994240857116359379907606001950938285454250989;
    c_d      CONSTANT numeric := 37095705934669439343138083508754565189542113879843219016388785533085940283555;
    c_sqrtm1 CONSTANT numeric := 19681161376707505956807079304988542015446066515923890162744021073123829784752;
    c_bx     CONSTANT numeric := 15112221349535400772501151409588531511454012693041857206046113283949847762202;
    c_by     CONSTANT numeric := 46316835694926478169428394003475163141307993866256225615783033603165251855960;
    v_s      numeric := 0;
    v_k      numeric := 0;
    v_x      numeric;
    v_y      numeric;
    v_u      numeric;
    v_v      numeric;
    v_v3     numeric;
    v_base   numeric;
    v_exp    numeric;
    v_pow    numeric;
    v_sign   integer;
    v_digest bytea;
    v_sbits  integer[] := '{}';
    v_kbits  integer[] := '{}';
    v_b      numeric[];
    v_nega   numeric[];
    v_both   numeric[];
    v_q      numeric[] := ARRAY[0, 1, 1, 0];  -- the neutral element
    v_enc    bytea := pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex');
    v_i      integer;
BEGIN
    IF pg_catalog.octet_length(_ed25519_verify.pub) <> 32 OR pg_catalog.octet_length(_ed25519_verify.sig) <> 64
       OR pg_catalog.get_byte(_ed25519_verify.sig, 63) & 224 <> 0 THEN
        RETURN false;
    END IF;
    -- S, little-endian, must be below L.
    FOR v_i IN REVERSE 63..32 LOOP
        v_s := v_s * 256 + pg_catalog.get_byte(_ed25519_verify.sig, v_i);
    END LOOP;
    IF v_s >= c_l THEN
        RETURN false;
    END IF;

    -- A: y (255 bits, little-endian) and the sign of x (RFC 8032 5.1.3).
    v_y := pg_catalog.get_byte(_ed25519_verify.pub, 31) & 127;
    FOR v_i IN REVERSE 30..0 LOOP
        v_y := v_y * 256 + pg_catalog.get_byte(_ed25519_verify.pub, v_i);
    END LOOP;
    v_y := pg_catalog.mod(v_y, c_p);
    v_sign := pg_catalog.get_byte(_ed25519_verify.pub, 31) >> 7;
    v_u := pg_catalog.mod(v_y * v_y - 1 + c_p, c_p);
    v_v := pg_catalog.mod(pg_catalog.mod(c_d * v_y, c_p) * v_y + 1, c_p);
    v_v3 := pg_catalog.mod(pg_catalog.mod(v_v * v_v, c_p) * v_v, c_p);
    -- x = u v^3 (u v^7)^((p-5)/8)
    v_base := pg_catalog.mod(pg_catalog.mod(v_u * v_v3, c_p) * pg_catalog.mod(v_v3 * v_v, c_p), c_p);
    v_exp := pg_catalog.div(c_p - 5, 8);
    v_pow := 1;
    WHILE v_exp > 0 LOOP
        IF pg_catalog.mod(v_exp, 2) = 1 THEN
            v_pow := pg_catalog.mod(v_pow * v_base, c_p);
        END IF;
        v_base := pg_catalog.mod(v_base * v_base, c_p);
        v_exp := pg_catalog.div(v_exp, 2);
    END LOOP;
    v_x := pg_catalog.mod(pg_catalog.mod(v_u * v_v3, c_p) * v_pow, c_p);
    v_base := pg_catalog.mod(pg_catalog.mod(v_x * v_x, c_p) * v_v, c_p);
    IF v_base = v_u THEN
        NULL;
    ELSIF v_base = pg_catalog.mod(c_p - v_u, c_p) THEN
        v_x := pg_catalog.mod(v_x * c_sqrtm1, c_p);
    ELSE
        RETURN false;  -- not a point of the curve
    END IF;
    IF pg_catalog.mod(v_x, 2) <> v_sign THEN
        v_x := pg_catalog.mod(c_p - v_x, c_p);
    END IF;
    -- -A = (-x, y)
    v_x := pg_catalog.mod(c_p - v_x, c_p);
    v_nega := ARRAY[v_x, v_y, 1, pg_catalog.mod(v_x * v_y, c_p)];
    v_b := ARRAY[c_bx, c_by, 1, pg_catalog.mod(c_bx * c_by, c_p)];
    v_both := webhooks._ed25519_add(v_b, v_nega);

    -- k = SHA-512(R || A || msg) mod L, little-endian.
    v_digest := pg_catalog.sha512(pg_catalog.substr(_ed25519_verify.sig, 1, 32) || _ed25519_verify.pub || _ed25519_verify.msg);
    FOR v_i IN REVERSE 63..0 LOOP
        v_k := v_k * 256 + pg_catalog.get_byte(v_digest, v_i);
    END LOOP;
    v_k := pg_catalog.mod(v_k, c_l);

    -- [S]B + [k](-A), both scalars below 2^253, bits from the top (Shamir).
    FOR v_i IN 1..253 LOOP
        v_sbits := v_sbits || pg_catalog.mod(v_s, 2)::integer;
        v_kbits := v_kbits || pg_catalog.mod(v_k, 2)::integer;
        v_s := pg_catalog.div(v_s, 2);
        v_k := pg_catalog.div(v_k, 2);
    END LOOP;
    FOR v_i IN REVERSE 253..1 LOOP
        v_q := webhooks._ed25519_add(v_q, v_q);
        IF v_sbits[v_i] = 1 AND v_kbits[v_i] = 1 THEN
            v_q := webhooks._ed25519_add(v_q, v_both);
        ELSIF v_sbits[v_i] = 1 THEN
            v_q := webhooks._ed25519_add(v_q, v_b);
        ELSIF v_kbits[v_i] = 1 THEN
            v_q := webhooks._ed25519_add(v_q, v_nega);
        END IF;
    END LOOP;

    -- Encode: y = Y/Z little-endian, the low bit of x = X/Z on top.
    v_base := v_q[3];
    v_exp := c_p - 2;
    v_pow := 1;
    WHILE v_exp > 0 LOOP
        IF pg_catalog.mod(v_exp, 2) = 1 THEN
            v_pow := pg_catalog.mod(v_pow * v_base, c_p);
        END IF;
        v_base := pg_catalog.mod(v_base * v_base, c_p);
        v_exp := pg_catalog.div(v_exp, 2);
    END LOOP;
    v_x := pg_catalog.mod(v_q[1] * v_pow, c_p);
    v_y := pg_catalog.mod(v_q[2] * v_pow, c_p);
    FOR v_i IN 0..31 LOOP
        v_enc := pg_catalog.set_byte(v_enc, v_i, pg_catalog.mod(v_y, 256)::integer);
        v_y := pg_catalog.div(v_y, 256);
    END LOOP;
    v_enc := pg_catalog.set_byte(v_enc, 31, pg_catalog.get_byte(v_enc, 31) | (pg_catalog.mod(v_x, 2)::integer << 7));
    RETURN v_enc = pg_catalog.substr(_ed25519_verify.sig, 1, 32);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ed25519_verify(bytea, bytea, bytea) IS
  'Private (_verify_signature): true when sig is a valid Ed25519 signature (RFC 8032) of msg under the '
  '32-byte public key pub, as Go''s crypto/ed25519.Verify decides; numeric arithmetic and the built-in '
  'sha512(), no pgcrypto. Tens of milliseconds per call. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_verify(bytea, bytea, bytea) FROM PUBLIC;
