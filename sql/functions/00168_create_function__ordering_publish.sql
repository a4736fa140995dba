-- +goose Up
-- begin sql/src/order/_ordering_publish.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ordering_publish is the statement trigger on webhooks.ordering
-- (ordering_publish): after any INSERT, DELETE, TRUNCATE or change of a
-- provider name it rewrites webhooks._ordered_providers() to return the
-- providers now in the table, in the same transaction, so the list commits
-- (or rolls back) with the change. set_ordering() and clear_ordering() hold
-- webhooks.ordering in SHARE ROW EXCLUSIVE mode already; the trigger takes
-- that lock too, so two writers never rewrite the function at once and each
-- reads the table after the other committed. It owns the function it
-- rewrites (SECURITY DEFINER), so whoever may change webhooks.ordering may
-- publish it.
CREATE OR REPLACE FUNCTION webhooks._ordering_publish()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_providers text[];
BEGIN
    LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;
    SELECT coalesce(pg_catalog.array_agg(o.provider ORDER BY o.provider COLLATE "C"), '{}')
    INTO v_providers
    FROM webhooks.ordering AS o;
    IF v_providers IS DISTINCT FROM webhooks._ordered_providers() THEN
        EXECUTE pg_catalog.format(
            'CREATE OR REPLACE FUNCTION webhooks._ordered_providers() RETURNS text[] LANGUAGE sql IMMUTABLE '
            'PARALLEL SAFE AS %L',
            pg_catalog.format('SELECT %L::text[]', v_providers));
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ordering_publish() IS
  'Private trigger (ordering_publish on webhooks.ordering): rewrites webhooks._ordered_providers() to return the '
  'providers with ordering, in the transaction that changed them.';
REVOKE EXECUTE ON FUNCTION webhooks._ordering_publish() FROM PUBLIC;
-- end sql/src/order/_ordering_publish.sql

CREATE TRIGGER ordering_publish
    AFTER INSERT OR DELETE OR UPDATE OF provider OR TRUNCATE ON webhooks.ordering
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

-- Publish what webhooks.ordering holds now: an UPDATE that changes nothing
-- fires the statement trigger once.
UPDATE webhooks.ordering SET provider = provider WHERE false;
