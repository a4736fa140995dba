-- +goose Up
-- begin sql/src/verify/_ed25519_table.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ed25519_table decodes the 32-byte encoding pub of an edwards25519
-- point P (RFC 8032 section 5.1.3, as Go's crypto/ed25519 decodes a public
-- key: y reduced modulo p = 2^255 - 19, x = 0 whatever its sign bit) and
-- returns the table of its multiples that webhooks._ed25519_verify adds up
-- instead of doubling: for each window w = 0..31 and j = 1..8 the point
-- j 256^w P in affine "Niels" form (y + x, y - x, 2 d x y), each value in
-- [0, p), at offsets 24 w + 3 (j - 1) + 1..3 of a numeric[768]. NULL when pub
-- is not 32 bytes or not the encoding of a point of the curve. Computing it
-- costs 32 x 12 point additions and doublings and one batched inversion
-- (about 10 ms), which is why _ed25519_verify reads the tables of the
-- configured whpk_ keys from webhooks.ed25519_key_tables (filled when
-- set_provider stores a key) and has the one of the base point B as a
-- constant (webhooks._ed25519_base_table). Never raises.
CREATE OR REPLACE FUNCTION webhooks._ed25519_table(pub bytea)
RETURNS numeric[]
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    c_p      CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
    c_2p     CONSTANT numeric := 2 * c_p;
    -- floor(10^160 / p) / 10^160, as in _ed25519_verify: t - trunc(t * m) * p
    -- is t mod p or t mod p + p for 0 <= t < 10^160.
    c_m      CONSTANT numeric := 0.0000000000000000000000000000000000000000000000000000000000000000000000000000172723371101888892507727037256007991422320007288725627700474069403371836063305224548;
    c_d      CONSTANT numeric := 37095705934669439343138083508754565189542113879843219016388785533085940283555;
    c_d2     CONSTANT numeric := 16295367250680780974490674513165176452449235426866156013048779062215315747161;  -- 2d mod p
    c_sqrtm1 CONSTANT numeric := 19681161376707505956807079304988542015446066515923890162744021073123829784752;
    -- The exponents (p - 5) / 8 = 2^252 - 3 and p - 2 = 2^255 - 21 in binary,
    -- most significant bit first.
    c_e_sqrt CONSTANT text := pg_catalog.repeat('1', 250) || '01';
    c_e_inv  CONSTANT text := pg_catalog.repeat('1', 250) || '01011';
    v_x      numeric;
    v_y      numeric;
    v_u      numeric;
    v_v      numeric;
    v_v3     numeric;
    v_base   numeric;
    v_pow    numeric;
    v_t      numeric;
    v_sign   integer;
    v_i      integer;
    v_w      integer;
    v_j      integer;
    v_n      integer;
    -- 256^w P (X, Y, Z, T) and its (Y + X, Y - X, 2 d T, 2 Z); Q, its
    -- multiples; the intermediate values of the formulas.
    v_sx numeric; v_sy numeric; v_sz numeric; v_st numeric;
    v_sypx numeric; v_symx numeric; v_st2d numeric; v_sz2 numeric;
    v_qx numeric; v_qy numeric; v_qz numeric; v_qt numeric;
    v_a numeric; v_b numeric; v_c numeric; v_dd numeric;
    v_e numeric; v_f numeric; v_g numeric; v_h numeric;
    -- The 256 points' X, Y, Z, and the products of their Z, prefix by prefix.
    v_xs     numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[256]);
    v_ys     numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[256]);
    v_zs     numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[256]);
    v_pre    numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[256]);
    v_inv    numeric;
    v_zinv   numeric;
    v_tab    numeric[] := pg_catalog.array_fill(0::numeric, ARRAY[768]);
BEGIN
    IF pg_catalog.octet_length(_ed25519_table.pub) <> 32 THEN
        RETURN NULL;
    END IF;
    v_y := pg_catalog.get_byte(_ed25519_table.pub, 31) & 127;
    FOR v_i IN REVERSE 30..0 LOOP
        v_y := v_y * 256 + pg_catalog.get_byte(_ed25519_table.pub, v_i);
    END LOOP;
    v_y := pg_catalog.mod(v_y, c_p);
    v_sign := pg_catalog.get_byte(_ed25519_table.pub, 31) >> 7;
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
        RETURN NULL;  -- not a point of the curve
    END IF;
    IF pg_catalog.mod(v_x, 2) <> v_sign THEN
        v_x := pg_catalog.mod(c_p - v_x, c_p);
    END IF;

    -- For each window w, with S = 256^w P: Q = S, 2 S, ..., 8 S (Q + S
    -- seven times), then 256^(w+1) P = 2^5 (8 S). The formulas (RFC 8032
    -- 5.1.4, extended coordinates, values kept in [0, 2p) as in
    -- _ed25519_verify) are complete: they also add the neutral element and
    -- points of small order.
    v_sx := v_x; v_sy := v_y; v_sz := 1; v_st := pg_catalog.mod(v_x * v_y, c_p);
    FOR v_w IN 0..31 LOOP
        v_sypx := v_sy + v_sx;
        v_symx := v_sy - v_sx + c_2p;
        v_t := v_st * c_d2;
        v_st2d := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_sz2 := 2 * v_sz;
        v_qx := v_sx; v_qy := v_sy; v_qz := v_sz; v_qt := v_st;
        FOR v_j IN 1..8 LOOP
            IF v_j > 1 THEN
                -- Q = Q + S
                v_t := (v_qy - v_qx + c_2p) * v_symx;
                v_a := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := (v_qy + v_qx) * v_sypx;
                v_b := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := v_qt * v_st2d;
                v_c := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := v_qz * v_sz2;
                v_dd := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_e := v_b - v_a + c_2p;
                v_f := v_dd - v_c + c_2p;
                v_g := v_dd + v_c;
                v_h := v_b + v_a;
                v_t := v_e * v_f;
                v_qx := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := v_g * v_h;
                v_qy := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := v_f * v_g;
                v_qz := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
                v_t := v_e * v_h;
                v_qt := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
            END IF;
            v_n := 8 * v_w + v_j;
            v_xs[v_n] := v_qx; v_ys[v_n] := v_qy; v_zs[v_n] := v_qz;
        END LOOP;
        CONTINUE WHEN v_w = 31;
        -- S = 2^5 Q (RFC 8032 5.1.4, doubling); T for the next window.
        FOR v_i IN 1..5 LOOP
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
        v_sx := v_qx; v_sy := v_qy; v_sz := v_qz;
        v_st := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
    END LOOP;

    -- Affine: one inversion for the 256 Z (Montgomery's trick; Z is never 0
    -- with complete formulas). v_pre[n] = Z_1 ... Z_n.
    v_inv := 1;
    FOR v_n IN 1..256 LOOP
        v_t := v_inv * v_zs[v_n];
        v_inv := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        v_pre[v_n] := v_inv;
    END LOOP;
    v_pow := v_inv;
    FOR v_i IN 2..pg_catalog.length(c_e_inv) LOOP
        v_t := v_pow * v_pow;
        v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        IF pg_catalog.substr(c_e_inv, v_i, 1) = '1' THEN
            v_t := v_pow * v_inv;
            v_pow := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        END IF;
    END LOOP;
    v_inv := v_pow;  -- 1 / (Z_1 ... Z_n) while n goes down
    FOR v_n IN REVERSE 256..1 LOOP
        IF v_n > 1 THEN
            v_t := v_inv * v_pre[v_n - 1];
            v_zinv := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
            v_t := v_inv * v_zs[v_n];
            v_inv := v_t - pg_catalog.trunc(v_t * c_m) * c_p;
        ELSE
            v_zinv := v_inv;
        END IF;
        -- Fully reduced: what is stored is in [0, p).
        v_x := pg_catalog.mod(v_xs[v_n] * v_zinv, c_p);
        v_y := pg_catalog.mod(v_ys[v_n] * v_zinv, c_p);
        v_tab[3 * v_n - 2] := pg_catalog.mod(v_y + v_x, c_p);
        v_tab[3 * v_n - 1] := pg_catalog.mod(v_y - v_x + c_p, c_p);
        v_tab[3 * v_n] := pg_catalog.mod(pg_catalog.mod(v_x * v_y, c_p) * c_d2, c_p);
    END LOOP;
    RETURN v_tab;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ed25519_table(bytea) IS
  'Private (_ed25519_verify, ed25519_key_tables): the multiples j 256^w P (j = 1..8, w = 0..31) of the '
  'edwards25519 point P encoded by pub, in affine Niels form, as a numeric[768]; NULL when pub is not a '
  'point. About 10 ms. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_table(bytea) FROM PUBLIC;
-- end sql/src/verify/_ed25519_table.sql
