-- +goose Up
-- webhooks.ed25519_key_tables holds, per whpk_ (Ed25519) public key of a
-- standardwebhooks provider, the multiples of the key's point that
-- webhooks._ed25519_verify adds up instead of doubling
-- (webhooks._ed25519_table: j 256^w A for j = 1..8, w = 0..31, a
-- numeric[768]; NULL when the key is not a point of the curve). Computing
-- them costs about 10 ms, a verification with them about 1.5: they are
-- computed when a key is stored, by a trigger on webhooks.provider_secrets,
-- never during a delivery (a refused delivery rolls back what it wrote, so a
-- table computed then would be computed again by every forged call). Public
-- data derived from public keys, written by the trigger only; readable by
-- the owner (and by the roles of grant_reader, which grants the schema's
-- tables but provider_secrets). The keys already stored are filled below.
CREATE TABLE webhooks.ed25519_key_tables (
    pub bytea     PRIMARY KEY CHECK (octet_length(pub) = 32),
    tab numeric[] CHECK (cardinality(tab) = 768)
);
REVOKE ALL ON TABLE webhooks.ed25519_key_tables FROM PUBLIC;

COMMENT ON TABLE webhooks.ed25519_key_tables IS
  'The multiples of each whpk_ public key of a standardwebhooks provider that _ed25519_verify adds up '
  '(_ed25519_table); kept by a trigger on provider_secrets.';
COMMENT ON COLUMN webhooks.ed25519_key_tables.pub IS
  'The 32-byte Ed25519 public key (the bytes of a whpk_ secret).';
COMMENT ON COLUMN webhooks.ed25519_key_tables.tab IS
  'j 256^w A for j = 1..8, w = 0..31, affine (y + x, y - x, 2 d x y), at 24 w + 3 (j - 1) + 1..3; NULL: not a point.';

CREATE TRIGGER provider_secrets_ed25519_key_tables
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhooks.provider_secrets
FOR EACH STATEMENT EXECUTE FUNCTION webhooks._ed25519_key_tables_sync();

-- The keys stored before this migration (the trigger's INSERT).
INSERT INTO webhooks.ed25519_key_tables (pub, tab)
SELECT k.pub, webhooks._ed25519_table(k.pub)
FROM (SELECT DISTINCT webhooks._whpk_key(s.secret) AS pub
      FROM webhooks.provider_secrets AS s
      WHERE s.kind = 'standardwebhooks'
        AND starts_with(s.secret, 'whpk_')) AS k
WHERE k.pub IS NOT NULL;
