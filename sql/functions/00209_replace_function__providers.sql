-- +goose Up
-- begin sql/src/admin/_providers.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._providers() lists the distinct providers of webhooks.keys (every event stored)
-- with a loose index scan of the (provider, external_id) key: one probe per
-- provider, whatever the number of events. The console uses it to look an
-- external id up under every provider.
CREATE OR REPLACE FUNCTION webhooks._providers()
RETURNS TABLE (provider text)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE p AS (
        (SELECT k.provider FROM webhooks.keys AS k ORDER BY k.provider LIMIT 1)
        UNION ALL
        SELECT (SELECT k.provider FROM webhooks.keys AS k
                WHERE k.provider > p.provider ORDER BY k.provider LIMIT 1)
        FROM p
        WHERE p.provider IS NOT NULL
    )
    SELECT p.provider FROM p WHERE p.provider IS NOT NULL
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks._providers() FROM PUBLIC;
COMMENT ON FUNCTION webhooks._providers() IS
  'Private: the distinct providers of webhooks.keys (every event stored), by a loose index scan (one probe each).';
-- end sql/src/admin/_providers.sql
