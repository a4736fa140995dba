-- +goose StatementBegin
-- webhooks._equal_ct compares two byte strings the way hmac.Equal does: it
-- XOR-accumulates every byte of a against b instead of stopping at the first
-- difference, and folds a length difference into the same accumulator, so the
-- work done does not depend on where (or whether) the contents differ. PL/pgSQL
-- is no constant-time environment, but this removes the early exit that makes
-- byte-by-byte guessing of a MAC practical.
CREATE OR REPLACE FUNCTION webhooks._equal_ct(a bytea, b bytea)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    v_len_a integer := pg_catalog.octet_length(_equal_ct.a);
    v_len_b integer := pg_catalog.octet_length(_equal_ct.b);
    v_diff  integer := v_len_a # v_len_b;
BEGIN
    FOR i IN 0..v_len_a - 1 LOOP
        v_diff := v_diff | (pg_catalog.get_byte(_equal_ct.a, i)
            # CASE WHEN i < v_len_b THEN pg_catalog.get_byte(_equal_ct.b, i) ELSE 0 END);
    END LOOP;
    RETURN v_diff = 0;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._equal_ct(bytea, bytea) IS
  'Private: true when a and b are the same bytes; compares every byte without an early exit '
  '(XOR-accumulate, lengths folded in), for comparing MACs.';
REVOKE EXECUTE ON FUNCTION webhooks._equal_ct(bytea, bytea) FROM PUBLIC;
