-- +goose StatementBegin
-- webhooks._hmac_sha256 is HMAC-SHA256 (RFC 2104) built on the sha256(bytea)
-- function PostgreSQL has had since version 11, so verifying signatures in SQL
-- needs no extension (not even pgcrypto): it works as is on managed services.
--
--   HMAC(K, m) = H((K0 xor opad) || H((K0 xor ipad) || m))
--
-- where K0 is the key, first hashed when it is longer than the 64-byte block,
-- then padded with zero bytes to 64; ipad is 0x36 and opad 0x5c repeated.
-- tests/verify_vectors_test.go checks it against RFC 4231.
CREATE OR REPLACE FUNCTION webhooks._hmac_sha256(key bytea, msg bytea)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
STRICT
PARALLEL SAFE
AS $$
DECLARE
    v_key  bytea := _hmac_sha256.key;
    v_ipad bytea;
    v_opad bytea;
    v_byte integer;
BEGIN
    IF pg_catalog.octet_length(v_key) > 64 THEN
        v_key := pg_catalog.sha256(v_key);
    END IF;
    v_key := v_key || pg_catalog.decode(pg_catalog.repeat('00', 64 - pg_catalog.octet_length(v_key)), 'hex');
    v_ipad := v_key;
    v_opad := v_key;
    FOR i IN 0..63 LOOP
        v_byte := pg_catalog.get_byte(v_key, i);
        v_ipad := pg_catalog.set_byte(v_ipad, i, v_byte # 54);  -- 0x36
        v_opad := pg_catalog.set_byte(v_opad, i, v_byte # 92);  -- 0x5c
    END LOOP;
    RETURN pg_catalog.sha256(v_opad || pg_catalog.sha256(v_ipad || _hmac_sha256.msg));
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._hmac_sha256(bytea, bytea) IS
  'Private: HMAC-SHA256(key, msg) per RFC 2104 on the built-in sha256(bytea) (PostgreSQL 11+): '
  'no extension needed, pgcrypto included. Checked against the RFC 4231 test vectors.';
REVOKE EXECUTE ON FUNCTION webhooks._hmac_sha256(bytea, bytea) FROM PUBLIC;
