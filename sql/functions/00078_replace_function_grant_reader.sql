-- +goose Up
-- grant_reader, restated: expectations.status_url (it may carry a presigned
-- token), contradictions.detail (it quotes payload fields) and
-- events.body_sha256 (derived from the body) join events.payload among the
-- columns a reader cannot select. Migration 00079 fixes the roles the old version gave
-- whole tables to.
-- begin sql/src/admin/grant_reader.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.grant_reader lets a role watch: the checks and their history, the
-- materialized views, reconcile runs, expectations, tombstones, gaps,
-- contradictions and webhooks.events, except the columns that hold payload
-- data or credentials: events.payload, events.body_sha256,
-- expectations.status_url, contradictions.detail (column-level grants for
-- those three tables). It cannot write, claim, ingest, or read a payload or a
-- secret. find_gaps shows it status_url as NULL.
CREATE OR REPLACE FUNCTION webhooks.grant_reader(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_table  text;
    v_hidden text[];
    v_cols   text;
BEGIN
    PERFORM webhooks._require_role(grant_reader.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_reader.role);
    FOR v_table IN
        SELECT c.relname
        FROM pg_catalog.pg_class AS c
        WHERE c.relnamespace = 'webhooks'::regnamespace
          AND c.relkind IN ('r', 'v', 'm')
          AND c.relname NOT IN ('events', 'expectations', 'contradictions', 'provider_secrets', 'goose_db_version')
        ORDER BY c.relname
    LOOP
        EXECUTE format('GRANT SELECT ON webhooks.%I TO %I', v_table, grant_reader.role);
    END LOOP;
    FOR v_table, v_hidden IN
        VALUES ('events', ARRAY['payload', 'body_sha256']),
               ('expectations', ARRAY['status_url']),
               ('contradictions', ARRAY['detail'])
    LOOP
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
        FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid = pg_catalog.format('webhooks.%I', v_table)::regclass
          AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> ALL (v_hidden);
        EXECUTE format('GRANT SELECT (%s) ON webhooks.%I TO %I', v_cols, v_table, grant_reader.role);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION
        webhooks.find_gaps(text),
        webhooks.find_sequence_gaps(text, bigint, bigint)
        TO %I', grant_reader.role);
END;
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION webhooks.grant_reader(text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.grant_reader(text) IS
  'Lets role read the checks, their results, the views, reconcile runs, expectations, tombstones, contradictions, '
  'gaps and events, except events.payload, events.body_sha256, expectations.status_url and contradictions.detail '
  '(find_gaps shows it status_url as NULL); no writes, no payloads, no secrets. Run as the owner of schema '
  'webhooks; run it again after migrations that add tables or views.';
-- end sql/src/admin/grant_reader.sql
