-- +goose StatementBegin
-- webhooks._ed25519_table decodes the 32-byte encoding pub of an edwards25519
-- point P (RFC 8032 section 5.1.3, as Go's crypto/ed25519 decodes a public
-- key: y reduced modulo p = 2^255 - 19, x = 0 whatever its sign bit) and
-- returns the table of its multiples that webhooks._ed25519_verify adds up
-- instead of doubling: for each window w = 0..31 and j = 1..8 the point
-- j 256^w P in affine "Niels" form (y + x, y - x, 2 d x y), each value in
-- [0, p), at offsets 24 w + 3 (j - 1) + 1..3 of a numeric[768]. NULL when pub
-- is not 32 bytes or not the encoding of a point of the curve. Computing it
-- costs 32 x 12 point additions and one batched inversion (tens of
-- milliseconds), which is why _ed25519_verify reads the tables of the
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
    v_sign   integer;
    v_i      integer;
    v_w      integer;
    v_j      integer;
    v_n      integer;
    v_step   numeric[];  -- 256^w P, extended coordinates
    v_pt     numeric[];
    v_pts    numeric[] := '{}';  -- the 256 points, X Y Z T each
    v_pre    numeric[] := '{}';  -- products of their Z, prefix by prefix
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
        v_pow := pg_catalog.mod(v_pow * v_pow, c_p);
        IF pg_catalog.substr(c_e_sqrt, v_i, 1) = '1' THEN
            v_pow := pg_catalog.mod(v_pow * v_base, c_p);
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

    -- j 256^w P for j = 1..8, then 256^(w+1) P = 2^5 (8 256^w P). The
    -- addition of webhooks._ed25519_add is complete: it also doubles, and
    -- adds the neutral element or points of small order.
    v_step := ARRAY[v_x, v_y, 1, pg_catalog.mod(v_x * v_y, c_p)];
    FOR v_w IN 0..31 LOOP
        v_pt := v_step;
        v_pts := v_pts || v_pt;
        FOR v_j IN 2..8 LOOP
            v_pt := webhooks._ed25519_add(v_pt, v_step);
            v_pts := v_pts || v_pt;
        END LOOP;
        FOR v_j IN 1..5 LOOP
            v_pt := webhooks._ed25519_add(v_pt, v_pt);
        END LOOP;
        v_step := v_pt;
    END LOOP;

    -- Affine: one inversion for the 256 Z (Montgomery's trick; Z is never 0
    -- with complete formulas). v_pre[n] = Z_1 ... Z_n.
    v_inv := 1;
    FOR v_n IN 1..256 LOOP
        v_inv := pg_catalog.mod(v_inv * v_pts[4 * v_n - 1], c_p);
        v_pre := v_pre || v_inv;
    END LOOP;
    v_pow := v_inv;
    FOR v_i IN 2..pg_catalog.length(c_e_inv) LOOP
        v_pow := pg_catalog.mod(v_pow * v_pow, c_p);
        IF pg_catalog.substr(c_e_inv, v_i, 1) = '1' THEN
            v_pow := pg_catalog.mod(v_pow * v_inv, c_p);
        END IF;
    END LOOP;
    v_inv := v_pow;  -- 1 / (Z_1 ... Z_n) while n goes down
    FOR v_n IN REVERSE 256..1 LOOP
        IF v_n > 1 THEN
            v_zinv := pg_catalog.mod(v_inv * v_pre[v_n - 1], c_p);
            v_inv := pg_catalog.mod(v_inv * v_pts[4 * v_n - 1], c_p);
        ELSE
            v_zinv := v_inv;
        END IF;
        v_x := pg_catalog.mod(v_pts[4 * v_n - 3] * v_zinv, c_p);
        v_y := pg_catalog.mod(v_pts[4 * v_n - 2] * v_zinv, c_p);
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
  'point. Tens of milliseconds. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_table(bytea) FROM PUBLIC;
