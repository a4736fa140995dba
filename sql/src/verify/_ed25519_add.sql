-- +goose StatementBegin
-- webhooks._ed25519_add adds two points of edwards25519 in extended
-- coordinates (X, Y, Z, T with x = X/Z, y = Y/Z, xy = T/Z), each a numeric[4]
-- of integers in [0, p), p = 2^255 - 19: the complete addition of RFC 8032
-- section 5.1.4 ("add-2008-hwcd-3"), which also doubles (p = q). It is the
-- only group operation webhooks._ed25519_table needs (it runs once per key:
-- webhooks._ed25519_verify adds inline, cheaper than a call per step).
CREATE OR REPLACE FUNCTION webhooks._ed25519_add(p numeric[], q numeric[])
RETURNS numeric[]
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    c_p  CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
    -- 2 * d mod p, d = -121665/121666 the curve constant.
    c_d2 CONSTANT numeric := 16295367250680780974490674513165176452449235426866156013048779062215315747161;
    v_a numeric;
    v_b numeric;
    v_c numeric;
    v_d numeric;
    v_e numeric;
    v_f numeric;
    v_g numeric;
    v_h numeric;
BEGIN
    v_a := pg_catalog.mod((_ed25519_add.p[2] - _ed25519_add.p[1] + c_p) * (_ed25519_add.q[2] - _ed25519_add.q[1] + c_p), c_p);
    v_b := pg_catalog.mod((_ed25519_add.p[2] + _ed25519_add.p[1]) * (_ed25519_add.q[2] + _ed25519_add.q[1]), c_p);
    v_c := pg_catalog.mod(pg_catalog.mod(_ed25519_add.p[4] * c_d2, c_p) * _ed25519_add.q[4], c_p);
    v_d := pg_catalog.mod(2 * _ed25519_add.p[3] * _ed25519_add.q[3], c_p);
    v_e := pg_catalog.mod(v_b - v_a + c_p, c_p);
    v_f := pg_catalog.mod(v_d - v_c + c_p, c_p);
    v_g := pg_catalog.mod(v_d + v_c, c_p);
    v_h := pg_catalog.mod(v_b + v_a, c_p);
    RETURN ARRAY[pg_catalog.mod(v_e * v_f, c_p), pg_catalog.mod(v_g * v_h, c_p),
                 pg_catalog.mod(v_f * v_g, c_p), pg_catalog.mod(v_e * v_h, c_p)];
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ed25519_add(numeric[], numeric[]) IS
  'Private (_ed25519_table): the sum of two edwards25519 points in extended coordinates (RFC 8032 5.1.4).';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_add(numeric[], numeric[]) FROM PUBLIC;
