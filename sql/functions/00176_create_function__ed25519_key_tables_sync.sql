-- +goose Up
-- begin sql/src/verify/_ed25519_key_tables_sync.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ed25519_key_tables_sync keeps webhooks.ed25519_key_tables equal to
-- the whpk_ keys of the standardwebhooks providers: the trigger function of
-- every statement that writes webhooks.provider_secrets (set_provider,
-- drop_provider). It removes the rows of keys no provider has any more and
-- computes the table of each new key (webhooks._ed25519_table, about
-- 10 ms a key), so that a delivery, refused or not, never pays for
-- it: _ed25519_verify reads it, and a table computed during a refused call
-- would be rolled back with the call. A key that is not a point of the
-- curve gets a NULL table: its signatures are refused at once.
CREATE OR REPLACE FUNCTION webhooks._ed25519_key_tables_sync()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    DELETE FROM webhooks.ed25519_key_tables AS t
    WHERE NOT EXISTS (
        SELECT FROM webhooks.provider_secrets AS s
        WHERE s.kind = 'standardwebhooks'
          AND pg_catalog.starts_with(s.secret, 'whpk_')
          AND webhooks._whpk_key(s.secret) = t.pub);
    INSERT INTO webhooks.ed25519_key_tables AS t (pub, tab)
    SELECT k.pub, webhooks._ed25519_table(k.pub)
    FROM (SELECT DISTINCT webhooks._whpk_key(s.secret) AS pub
          FROM webhooks.provider_secrets AS s
          WHERE s.kind = 'standardwebhooks'
            AND pg_catalog.starts_with(s.secret, 'whpk_')) AS k
    WHERE k.pub IS NOT NULL
      AND NOT EXISTS (SELECT FROM webhooks.ed25519_key_tables AS c WHERE c.pub = k.pub)
    ON CONFLICT (pub) DO NOTHING;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ed25519_key_tables_sync() IS
  'Private (trigger on webhooks.provider_secrets): keeps webhooks.ed25519_key_tables to one row per whpk_ key '
  'of a standardwebhooks provider, its multiples computed by webhooks._ed25519_table.';
REVOKE EXECUTE ON FUNCTION webhooks._ed25519_key_tables_sync() FROM PUBLIC;
-- end sql/src/verify/_ed25519_key_tables_sync.sql
