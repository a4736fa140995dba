-- +goose Up
-- The roles the old grant_reader gave whole tables to lose
-- expectations.status_url and contradictions.detail: their table-level SELECT
-- on those two tables becomes a column-level SELECT of every other column,
-- which is what grant_reader gives from now on.
--
-- A reader is told by what grant_reader never gave: it cannot select
-- events.payload. A role that can (an operator granted the tables outright)
-- keeps its table-level SELECT. The owner is left alone.
--
-- find_gaps now reads expectations through the view _expectations_masked:
-- every role that may call find_gaps may select from that view, so existing
-- readers keep their gaps (with status_url NULL).
-- +goose StatementBegin
DO $$
DECLARE
    v_table  text;
    v_hidden text;
    v_role   text;
    v_cols   text;
BEGIN
    FOR v_table, v_hidden IN VALUES ('expectations', 'status_url'), ('contradictions', 'detail') LOOP
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
        FROM pg_catalog.pg_attribute AS a
        WHERE a.attrelid = pg_catalog.format('webhooks.%I', v_table)::regclass
          AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> v_hidden;
        FOR v_role IN
            SELECT DISTINCT r.rolname
            FROM pg_catalog.pg_class AS c
            CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
            JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
            WHERE c.oid = pg_catalog.format('webhooks.%I', v_table)::regclass
              AND acl.privilege_type = 'SELECT'
              AND acl.grantee <> c.relowner
              AND NOT pg_catalog.has_column_privilege(acl.grantee, 'webhooks.events', 'payload', 'SELECT')
            ORDER BY r.rolname
        LOOP
            EXECUTE format('REVOKE SELECT ON webhooks.%I FROM %I', v_table, v_role);
            EXECUTE format('GRANT SELECT (%s) ON webhooks.%I TO %I', v_cols, v_table, v_role);
        END LOOP;
    END LOOP;
    FOR v_role IN
        SELECT DISTINCT r.rolname
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS acl
        JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
        WHERE p.oid = 'webhooks.find_gaps(text)'::pg_catalog.regprocedure
          AND acl.privilege_type = 'EXECUTE'
          AND acl.grantee <> p.proowner
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT SELECT ON webhooks._expectations_masked TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
