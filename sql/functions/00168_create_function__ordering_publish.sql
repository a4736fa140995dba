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
CREATE OR REPLACE FUNCTION webhooks._ordering_publish()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was text[];
    v_now text[];
BEGIN
    LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;
    v_was := webhooks._ordered_providers();
    IF TG_OP = 'TRUNCATE' THEN
        v_now := '{}';
    ELSIF TG_OP = 'INSERT' THEN
        SELECT pg_catalog.array_agg(x.p ORDER BY x.p COLLATE "C") INTO v_now
        FROM (SELECT pg_catalog.unnest(v_was) AS p
              UNION SELECT n.provider FROM new_rows AS n) AS x;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.array_agg(x.p ORDER BY x.p COLLATE "C") INTO v_now
        FROM (SELECT pg_catalog.unnest(v_was) AS p
              EXCEPT SELECT o.provider FROM old_rows AS o) AS x;
    ELSE
        SELECT pg_catalog.array_agg(x.p ORDER BY x.p COLLATE "C") INTO v_now
        FROM ((SELECT pg_catalog.unnest(v_was) AS p
               EXCEPT SELECT o.provider FROM old_rows AS o)
              UNION SELECT n.provider FROM new_rows AS n) AS x;
    END IF;
    v_now := coalesce(v_now, '{}');
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
-- end sql/src/order/_ordering_publish.sql

CREATE TRIGGER ordering_publish_insert
    AFTER INSERT ON webhooks.ordering
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE TRIGGER ordering_publish_update
    AFTER UPDATE ON webhooks.ordering
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE TRIGGER ordering_publish_delete
    AFTER DELETE ON webhooks.ordering
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

CREATE TRIGGER ordering_publish_truncate
    AFTER TRUNCATE ON webhooks.ordering
    FOR EACH STATEMENT
    EXECUTE FUNCTION webhooks._ordering_publish();

-- Publish what webhooks.ordering holds now: an UPDATE of every row (a
-- small table) hands them all to the trigger as renamed to themselves.
UPDATE webhooks.ordering SET provider = provider;
