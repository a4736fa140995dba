-- +goose Up
-- begin sql/src/order/_ordering_publish.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ordering_publish is the trigger on webhooks.ordering (one per
-- statement kind: ordering_publish_insert, _update, _delete, _truncate)
-- that rewrites webhooks._ordered_providers() after a change of the
-- providers in the table, in the same transaction, so the list commits (or
-- rolls back) with the change. It applies the statement's change to the
-- list published last (the rows the statement inserted, deleted or renamed:
-- its transition tables) rather than reading the table, whose rows a
-- REPEATABLE READ snapshot taken before another writer committed would not
-- show; the function's definition is read from the catalog as committed.
-- set_ordering() and clear_ordering() hold webhooks.ordering in SHARE ROW
-- EXCLUSIVE mode already; the trigger takes that lock too, so two writers
-- never rewrite the function at once and each starts from what the other
-- published. It owns the function it rewrites (SECURITY DEFINER), so
-- whoever may change webhooks.ordering may publish it. A statement that
-- leaves the list as it was rewrites nothing.
--
-- The triggers are created below with the function (CREATE OR REPLACE, so a
-- migration written from this file runs again over them), then the list is
-- published from what webhooks.ordering holds: a migration replacing this
-- function publishes with the function it installs.
CREATE OR REPLACE FUNCTION webhooks._ordering_publish()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was  text[];
    v_gone text[] := '{}';
    v_new  text[] := '{}';
    v_now  text[];
BEGIN
    LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;
    v_was := webhooks._ordered_providers();
    -- The statement's change: the names it removed (or renamed from) and
    -- the names it added (or renamed to). TRUNCATE removes them all.
    IF TG_OP = 'TRUNCATE' THEN
        v_gone := v_was;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        v_gone := ARRAY(SELECT o.provider FROM old_rows AS o);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        v_new := ARRAY(SELECT n.provider FROM new_rows AS n);
    END IF;
    SELECT coalesce(pg_catalog.array_agg(x.p ORDER BY x.p COLLATE "C"), '{}') INTO v_now
    FROM (SELECT pg_catalog.unnest(v_was) AS p
          EXCEPT SELECT pg_catalog.unnest(v_gone)
          UNION SELECT pg_catalog.unnest(v_new)) AS x;
    IF v_now IS DISTINCT FROM v_was THEN
        EXECUTE pg_catalog.format(
            'CREATE OR REPLACE FUNCTION webhooks._ordered_providers() RETURNS text[] LANGUAGE sql IMMUTABLE '
            'PARALLEL SAFE AS %L',
            pg_catalog.format('SELECT %L::text[]', v_now));
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ordering_publish() IS
  'Private trigger (ordering_publish_insert, _update, _delete, _truncate on webhooks.ordering): applies the '
  'statement''s change of providers to webhooks._ordered_providers(), rewriting it in the same transaction.';
REVOKE EXECUTE ON FUNCTION webhooks._ordering_publish() FROM PUBLIC;

CREATE OR REPLACE TRIGGER ordering_publish_insert
    AFTER INSERT ON webhooks.ordering
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE OR REPLACE TRIGGER ordering_publish_update
    AFTER UPDATE ON webhooks.ordering
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE OR REPLACE TRIGGER ordering_publish_delete
    AFTER DELETE ON webhooks.ordering
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE OR REPLACE TRIGGER ordering_publish_truncate
    AFTER TRUNCATE ON webhooks.ordering
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

-- Publish what webhooks.ordering holds now: an UPDATE of every row (a
-- small table) hands them all to the trigger as renamed to themselves.
UPDATE webhooks.ordering SET provider = provider;
-- end sql/src/order/_ordering_publish.sql
