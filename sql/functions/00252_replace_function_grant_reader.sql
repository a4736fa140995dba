-- +goose Up
-- begin sql/src/admin/grant_reader.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.grant_reader lets a role watch: the checks and their history, the
-- materialized views, reconcile runs, expectations, tombstones, gaps,
-- contradictions, ordering and webhooks.events, without any value taken from
-- a payload and without credentials. Column-level grants leave out:
--   events.payload, events.body_sha256      the body, and its digest
--   events.order_key, order_num, order_text  values read from the payload at
--                                            the provider's key_path and
--                                            order_path (a customer id, an
--                                            e-mail, ...)
--   order_marks.order_key, order_num, order_text, prior_num, prior_text
--                                            the same values, per sequence
--   blocked_sequences.sequence_key           the same value, per sequence
--   expectations.status_url                  may carry a presigned token
--   contradictions.detail                    quotes payload fields
--   keys.body_sha256                         the digest of a body
-- provider_secrets and goose_db_version are not granted at all, nor the
-- tables behind webhooks.events (webhooks.inbox, webhooks.history and its
-- day slices): the view is what a reader reads. Everything
-- else in the schema (tables, views, materialized views) is, whole. It
-- cannot write, claim or ingest. find_gaps shows it status_url as NULL. A
-- table of the list that does not exist yet is skipped (migrations run this
-- for existing readers at versions before some of them).
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
    FOR v_table, v_hidden IN
        SELECT c.relname, h.hidden
        FROM pg_catalog.pg_class AS c
        LEFT JOIN (VALUES
            ('events', ARRAY['payload', 'body_sha256', 'order_key', 'order_num', 'order_text']),
            ('keys', ARRAY['body_sha256']),
            ('order_marks', ARRAY['order_key', 'order_num', 'order_text', 'prior_num', 'prior_text']),
            ('blocked_sequences', ARRAY['sequence_key']),
            ('expectations', ARRAY['status_url']),
            ('contradictions', ARRAY['detail'])
        ) AS h (relname, hidden) ON h.relname = c.relname
        WHERE c.relnamespace = 'webhooks'::regnamespace
          AND c.relkind IN ('r', 'v', 'm')
          AND c.relname NOT IN ('provider_secrets', 'goose_db_version', 'inbox')
          AND NOT c.relispartition
        ORDER BY c.relname
    LOOP
        IF v_hidden IS NULL THEN
            EXECUTE format('GRANT SELECT ON webhooks.%I TO %I', v_table, grant_reader.role);
            CONTINUE;
        END IF;
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
  'ordering, gaps and events, without a value taken from a payload or a credential: not events.payload, '
  'body_sha256, order_key, order_num, order_text, nor order_marks.order_key, order_num, order_text, prior_num, '
  'prior_text, blocked_sequences.sequence_key, expectations.status_url or contradictions.detail (find_gaps shows '
  'it status_url as NULL); no writes, no secrets. Run as the owner of schema webhooks; run it again after '
  'migrations that add tables or views.';
-- end sql/src/admin/grant_reader.sql
