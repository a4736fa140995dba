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
-- Go's does (webhooks._ed25519_table).
--
-- It costs milliseconds per call (numeric, not constant time: every input is
-- public), so _verify_signature tries the HMAC secrets first, only for a
-- timestamp within tolerance, and calls it at most twice per public key
-- (_signature_bounds refuses more than 2 v1a entries). It doubles only
-- four times: S and k are written in 64 signed digits of 4 bits each
-- (-8..8), and [S]B - [k]A is the sum of at most 128 precomputed points, a
-- digit e of S at position i adding e 16^i B and a digit f of k adding
-- -f 16^i A (the table's |e| 16^i B or its opposite). The odd positions'
-- come from tables of j 256^w B and j 256^w A (j = 1..8, w = 0..31), their
-- sum is multiplied by 16 (four doublings), then the even positions' are
-- added, as ref10's fixed-base multiplication does. The
-- table of B is a constant (webhooks._ed25519_base_table); the one of A is
-- read from webhooks.ed25519_key_tables, where the configured whpk_ keys
-- have theirs (computed when stored), else computed here (about 10 ms:
-- only for a key that no provider has). A table's points are
-- affine, so an addition costs 7 products. Products are reduced modulo p by
-- t - trunc(t * m) * p with m = floor(10^160 / p) / 10^160 (two products,
-- where numeric's mod() divides), which leaves t mod p or t mod p + p for
-- any 0 <= t < 10^160; the values in between are kept in [0, 2p)
-- ("lazily" reduced: differences add a multiple of p to stay positive,
-- every product stays below 48 p^2 < 10^156). The result is compared with R
-- without an inversion first (Y = y_R Z modulo p): a signature that does not
-- verify almost always fails there; only then is x = X / Z computed for its
-- sign bit. Never raises.
CREATE OR REPLACE FUNCTION webhooks._ed25519_verify(pub bytea, msg bytea, sig bytea)
RETURNS boolean
LANGUAGE plpgsql
STABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    c_p      CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
    c_2p     CONSTANT numeric := 2 * c_p;
    -- floor(10^160 / p) / 10^160: at most 1/p, less than 10^-160 below it.
    c_m      CONSTANT numeric := 0.0000000000000000000000000000000000000000000000000000000000000000000000000000172723371101888892507727037256007991422320007288725627700474069403371836063305224548;
    c_l      CONSTANT numeric := 7237005577332262213973186563042994240857116359379907606001950938285454250989;
    -- 1/z = z^(p - 2) = z^(2^255 - 21) by ref10's chain: 254 squares and 11
    -- products. Step i: r[dst] := r[src]^(2^n) * r[mul] (no product when
    -- mul = 0), as (src, n, mul, dst); r[1] = z. It makes z^2, z^9, z^11,
    -- z^31 = z^(2^5 - 1), then z^(2^10 - 1), ... z^(2^250 - 1), and
    -- z^(2^255 - 32) * z^11.
    c_chain  CONSTANT integer[] := ARRAY[1, 1, 0, 2,   2, 2, 1, 3,   2, 0, 3, 2,   2, 1, 3, 3,
                                         3, 5, 3, 4,   4, 10, 4, 5,  5, 20, 5, 5,  5, 10, 4, 5,
                                         5, 50, 5, 6,  6, 100, 6, 6, 6, 50, 5, 6,  6, 5, 2, 6];
    v_r      numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[6]);
    v_j      integer;
    v_btab   numeric[] := webhooks._ed25519_base_table();
    v_atab   numeric[];
    v_s      numeric := 0;
    v_k      numeric := 0;
    v_ry     numeric;
    v_x      numeric;
    v_pow    numeric;
    v_t      numeric;
    v_digest bytea;
    v_kbytes bytea := pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex');
    -- The signed digits of S (1..64) and of k (65..128), least significant
    -- first.
    v_dig    integer[] := pg_catalog.array_fill(0, ARRAY[128]);
    v_carry  integer;
    v_cark   integer;
    v_byte   integer;
    v_d      integer;
    v_o      integer;
    v_n      integer;
    v_i      integer;
    -- The addend (y + x, y - x, 2 d x y), the running point Q (from the
    -- neutral element) and the intermediate values of the formulas.
    v_ypx numeric; v_ymx numeric; v_xy2d numeric;
    v_qx numeric := 0; v_qy numeric := 1; v_qz numeric := 1; v_qt numeric := 0;
    v_a numeric; v_b numeric; v_c numeric; v_dd numeric;
    v_e numeric; v_f numeric; v_g numeric; v_h numeric;
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
    -- R's y must be below p (Go compares encodings: a non-canonical R never
    -- equals one).
    v_ry := pg_catalog.get_byte(_ed25519_verify.sig, 31) & 127;
    FOR v_i IN REVERSE 30..0 LOOP
        v_ry := v_ry * 256 + pg_catalog.get_byte(_ed25519_verify.sig, v_i);
    END LOOP;
    IF v_ry >= c_p THEN
        RETURN false;
    END IF;

    SELECT t.tab INTO v_atab
    FROM webhooks.ed25519_key_tables AS t
    WHERE t.pub = _ed25519_verify.pub;
    IF NOT FOUND THEN
        v_atab := webhooks._ed25519_table(_ed25519_verify.pub);
    END IF;
    IF v_atab IS NULL THEN
        RETURN false;  -- not a point of the curve
    END IF;

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

    -- Signed digits: each nibble, plus the carry of the one below, brought
    -- into -8..7 by carrying 16 up; the top digit (S, k < 2^253) stays <= 2.
    v_carry := 0;
    v_cark := 0;
    FOR v_i IN 0..63 LOOP
        v_byte := pg_catalog.get_byte(_ed25519_verify.sig, 32 + v_i / 2);
        v_d := CASE WHEN v_i % 2 = 0 THEN v_byte & 15 ELSE v_byte >> 4 END + v_carry;
        v_carry := (v_d + 8) >> 4;
        v_dig[v_i + 1] := v_d - (v_carry << 4);
        v_byte := pg_catalog.get_byte(v_kbytes, v_i / 2);
        v_d := CASE WHEN v_i % 2 = 0 THEN v_byte & 15 ELSE v_byte >> 4 END + v_cark;
        v_cark := (v_d + 8) >> 4;
        v_dig[v_i + 65] := v_d - (v_cark << 4);
    END LOOP;
    v_dig[64] := v_dig[64] + (v_carry << 4);
    v_dig[128] := v_dig[128] + (v_cark << 4);

    -- Steps 0..63 add the odd digits' points (S's to B's, then -k's to A's,
    -- window by window), steps 64..127 the even digits'.
    FOR v_n IN 0..127 LOOP
        IF v_n = 64 THEN
            -- Q = 16 Q: four doublings (RFC 8032 5.1.4); T only in the last,
            -- the only one an addition follows.
            FOR v_i IN 1..4 LOOP
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
            END LOOP;
            v_t := v_e * v_h;
            v_qt := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;
        -- Digit i = 2 w + 1 (steps 0..63) or 2 w (64..127) of window w.
        v_i := 2 * ((v_n % 64) / 2) + CASE WHEN v_n < 64 THEN 1 ELSE 0 END;
        IF v_n % 2 = 0 THEN
            v_d := v_dig[v_i + 1];
        ELSE
            v_d := -v_dig[v_i + 65];
        END IF;
        CONTINUE WHEN v_d = 0;
        v_o := 24 * (v_i / 2) + 3 * (abs(v_d) - 1);
        IF v_n % 2 = 0 THEN
            v_ypx := v_btab[v_o + 1]; v_ymx := v_btab[v_o + 2]; v_xy2d := v_btab[v_o + 3];
        ELSE
            v_ypx := v_atab[v_o + 1]; v_ymx := v_atab[v_o + 2]; v_xy2d := v_atab[v_o + 3];
        END IF;
        -- Q = Q + P (RFC 8032 5.1.4, addition, with P = (x, y) affine: its
        -- Z is 1 and its T times 2d given); -P = (-x, y) swaps y + x and
        -- y - x and negates 2 d x y, which swaps F and G.
        IF v_d < 0 THEN
            v_t := v_ypx; v_ypx := v_ymx; v_ymx := v_t;
        END IF;
        v_t := (v_qy - v_qx + c_2p) * v_ymx;
        v_a := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := (v_qy + v_qx) * v_ypx;
        v_b := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_qt * v_xy2d;
        v_c := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_dd := 2 * v_qz;
        v_e := v_b - v_a + c_2p;
        v_h := v_b + v_a;
        IF v_d < 0 THEN
            v_f := v_dd + v_c;
            v_g := v_dd - v_c + c_2p;
        ELSE
            v_f := v_dd - v_c + c_2p;
            v_g := v_dd + v_c;
        END IF;
        v_t := v_e * v_f;
        v_qx := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_g * v_h;
        v_qy := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_f * v_g;
        v_qz := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_t := v_e * v_h;
        v_qt := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
    END LOOP;

    -- The encoding of Q is R when y = Y / Z is R's y (compared as Y = y_R Z:
    -- no inversion) and the low bit of x = X / Z is R's top bit.
    IF pg_catalog.mod(v_qy - v_ry * v_qz, c_p) <> 0 THEN
        RETURN false;
    END IF;
    v_r[1] := v_qz;
    FOR v_i IN 0..11 LOOP
        v_pow := v_r[c_chain[4 * v_i + 1]];
        FOR v_j IN 1..c_chain[4 * v_i + 2] LOOP
            v_t := v_pow * v_pow;
            v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END LOOP;
        IF c_chain[4 * v_i + 3] > 0 THEN
            v_t := v_pow * v_r[c_chain[4 * v_i + 3]];
            v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;
        v_r[c_chain[4 * v_i + 4]] := v_pow;
    END LOOP;
    v_x := pg_catalog.mod(v_qx * v_r[6], c_p);
    RETURN pg_catalog.mod(v_x, 2)::integer = pg_catalog.get_byte(_ed25519_verify.sig, 31) >> 7;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ed25519_verify(bytea, bytea, bytea) IS
  'Private (_verify_signature): true when sig is a valid Ed25519 signature (RFC 8032) of msg under the '
  '32-byte public key pub, as Go''s crypto/ed25519.Verify decides; numeric arithmetic and the built-in '
  'sha512(), no pgcrypto; the multiples of pub from webhooks.ed25519_key_tables when there. Milliseconds '
  'per call. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_verify(bytea, bytea, bytea) FROM PUBLIC;
-- end sql/src/verify/_ed25519_verify.sql
