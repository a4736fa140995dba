-- +goose Up
-- begin sql/src/verify/_ed25519_verify.sql (make sql-migrations wrote what follows from that file: edit it, not this)
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
-- Go's does.
--
-- It costs milliseconds per call (numeric, not constant time: every input is
-- public), so _verify_signature tries the HMAC secrets first, only for a
-- timestamp within tolerance, and calls it at most twice per public key
-- (_signature_bounds refuses more than 2 v1a entries). What it costs is
-- reductions modulo p of products, so they are made cheap: t - trunc(t * m) * p
-- with m = floor(10^160 / p) / 10^160 (two multiplications, where numeric's
-- mod() divides) leaves t mod p or t mod p + p for any 0 <= t < 10^160, and
-- the values in between are kept in [0, 2p) ("lazily" reduced: differences
-- add a multiple of p to stay positive, every product stays below 48 p^2 <
-- 10^156); only the values compared or encoded are fully reduced with mod().
-- The points are in extended coordinates (X, Y, Z, T), [S]B - [k]A is a
-- Shamir double-and-add over both scalars' bits with RFC 8032 section
-- 5.1.4's doubling (4 squares, 4 products) and addition (add-2008-hwcd-3),
-- written inline: a call of webhooks._ed25519_add per step cost more than
-- the arithmetic. Never raises.
CREATE OR REPLACE FUNCTION webhooks._ed25519_verify(pub bytea, msg bytea, sig bytea)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    c_p      CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
    c_2p     CONSTANT numeric := 2 * c_p;
    -- floor(10^160 / p) / 10^160: at most 1/p, less than 10^-160 below it.
    c_m      CONSTANT numeric := 0.0000000000000000000000000000000000000000000000000000000000000000000000000000172723371101888892507727037256007991422320007288725627700474069403371836063305224548;
    c_l      CONSTANT numeric := 7237005577332262213973186563042994240857116359379907606001950938285454250989;
    c_d      CONSTANT numeric := 37095705934669439343138083508754565189542113879843219016388785533085940283555;
    c_d2     CONSTANT numeric := 16295367250680780974490674513165176452449235426866156013048779062215315747161;  -- 2d mod p
    c_sqrtm1 CONSTANT numeric := 19681161376707505956807079304988542015446066515923890162744021073123829784752;
    c_bx     CONSTANT numeric := 15112221349535400772501151409588531511454012693041857206046113283949847762202;
    c_by     CONSTANT numeric := 46316835694926478169428394003475163141307993866256225615783033603165251855960;
    c_bt2d   CONSTANT numeric := 50237614328228664512531835696112167678046477356841409204013502641986506238568;  -- x y 2d of B, mod p
    -- The exponents (p - 5) / 8 = 2^252 - 3 and p - 2 = 2^255 - 21 in binary,
    -- most significant bit first.
    c_e_sqrt CONSTANT text := pg_catalog.repeat('1', 250) || '01';
    c_e_inv  CONSTANT text := pg_catalog.repeat('1', 250) || '01011';
    v_s      numeric := 0;
    v_k      numeric := 0;
    v_x      numeric;
    v_y      numeric;
    v_u      numeric;
    v_v      numeric;
    v_v3     numeric;
    v_base   numeric;
    v_pow    numeric;
    v_t      numeric;
    v_sign   integer;
    v_digest bytea;
    v_kbytes bytea := pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex');
    v_sbit   boolean;
    v_kbit   boolean;
    v_both   numeric[];
    -- -A (Z = 1) and B - A: X, Y, Z and T 2d.
    v_ax numeric; v_ay numeric; v_at2d numeric;
    v_cx numeric; v_cy numeric; v_cz numeric; v_ct2d numeric;
    -- The addend of a step, the running point Q (from the neutral element)
    -- and the intermediate values of the formulas.
    v_px numeric; v_py numeric; v_pz numeric; v_pt2d numeric;
    v_qx numeric := 0; v_qy numeric := 1; v_qz numeric := 1; v_qt numeric := 0;
    v_a numeric; v_b numeric; v_c numeric; v_d numeric;
    v_e numeric; v_f numeric; v_g numeric; v_h numeric;
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
    v_pow := v_base;
    FOR v_i IN 2..pg_catalog.length(c_e_sqrt) LOOP
        v_t := v_pow * v_pow;
        v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        IF pg_catalog.substr(c_e_sqrt, v_i, 1) = '1' THEN
            v_t := v_pow * v_base;
            v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;
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
    v_ax := pg_catalog.mod(c_p - v_x, c_p);
    v_ay := v_y;
    v_at2d := pg_catalog.mod(pg_catalog.mod(v_ax * v_ay, c_p) * c_d2, c_p);
    -- B - A, once.
    v_both := webhooks._ed25519_add(ARRAY[c_bx, c_by, 1, pg_catalog.mod(c_bx * c_by, c_p)],
                                    ARRAY[v_ax, v_ay, 1, pg_catalog.mod(v_ax * v_ay, c_p)]);
    v_cx := v_both[1];
    v_cy := v_both[2];
    v_cz := v_both[3];
    v_ct2d := pg_catalog.mod(v_both[4] * c_d2, c_p);

    -- k = SHA-512(R || A || msg) mod L, little-endian.
    v_digest := pg_catalog.sha512(pg_catalog.substr(_ed25519_verify.sig, 1, 32) || _ed25519_verify.pub || _ed25519_verify.msg);
    FOR v_i IN REVERSE 63..0 LOOP
        v_k := v_k * 256 + pg_catalog.get_byte(v_digest, v_i);
    END LOOP;
    v_k := pg_catalog.mod(v_k, c_l);
    FOR v_i IN 0..31 LOOP
        v_kbytes := pg_catalog.set_byte(v_kbytes, v_i, pg_catalog.mod(v_k, 256)::integer);
        v_k := pg_catalog.div(v_k, 256);
    END LOOP;

    -- [S]B + [k](-A), both scalars below 2^253, bits from the top (Shamir);
    -- bit i of S is bit 256 + i of the signature (get_bit numbers from the
    -- least significant bit of the first byte), bit i of k bit i of v_kbytes.
    FOR v_i IN REVERSE 252..0 LOOP
        v_sbit := pg_catalog.get_bit(_ed25519_verify.sig, 256 + v_i) = 1;
        v_kbit := pg_catalog.get_bit(v_kbytes, v_i) = 1;
        -- Q = 2Q (RFC 8032 5.1.4, doubling); T only for an addition next,
        -- the only step that reads it.
        v_t := v_qx * v_qx;
        v_a := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_qy * v_qy;
        v_b := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_qz * v_qz;
        v_c := 2 * (v_t - pg_catalog.trunc(v_t * c_m) * c_p);
        v_h := v_a + v_b;
        v_t := (v_qx + v_qy) * (v_qx + v_qy);
        v_e := v_h - (v_t - pg_catalog.trunc(v_t * c_m) * c_p) + c_2p;
        v_g := v_a - v_b + c_2p;
        v_f := v_c + v_g;
        v_t := v_e * v_f;
        v_qx := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_g * v_h;
        v_qy := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_f * v_g;
        v_qz := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        IF v_sbit OR v_kbit THEN
            v_t := v_e * v_h;
            v_qt := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;

        IF v_sbit AND v_kbit THEN
            v_px := v_cx; v_py := v_cy; v_pz := v_cz; v_pt2d := v_ct2d;
        ELSIF v_sbit THEN
            v_px := c_bx; v_py := c_by; v_pz := 1; v_pt2d := c_bt2d;
        ELSIF v_kbit THEN
            v_px := v_ax; v_py := v_ay; v_pz := 1; v_pt2d := v_at2d;
        ELSE
            CONTINUE;
        END IF;
        -- Q = Q + P (RFC 8032 5.1.4, addition; P's T comes times 2d). The
        -- sum's T is not computed: a doubling comes next, which does not
        -- read it.
        v_t := (v_qy - v_qx + c_2p) * (v_py - v_px + c_2p);
        v_a := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := (v_qy + v_qx) * (v_py + v_px);
        v_b := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_qt * v_pt2d;
        v_c := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := 2 * v_qz * v_pz;
        v_d := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_e := v_b - v_a + c_2p;
        v_f := v_d - v_c + c_2p;
        v_g := v_d + v_c;
        v_h := v_b + v_a;
        v_t := v_e * v_f;
        v_qx := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_g * v_h;
        v_qy := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_f * v_g;
        v_qz := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
    END LOOP;

    -- Encode: y = Y/Z little-endian, the low bit of x = X/Z on top.
    v_pow := v_qz;
    FOR v_i IN 2..pg_catalog.length(c_e_inv) LOOP
        v_t := v_pow * v_pow;
        v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        IF pg_catalog.substr(c_e_inv, v_i, 1) = '1' THEN
            v_t := v_pow * v_qz;
            v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;
    END LOOP;
    v_x := pg_catalog.mod(v_qx * v_pow, c_p);
    v_y := pg_catalog.mod(v_qy * v_pow, c_p);
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
  'sha512(), no pgcrypto. Milliseconds per call. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_verify(bytea, bytea, bytea) FROM PUBLIC;
-- end sql/src/verify/_ed25519_verify.sql
