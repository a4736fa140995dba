-- +goose Up
-- grant_reader again for each role it was run for (told apart as in 00101),
-- now that it gives no value taken from a payload: a reader reads
-- webhooks.events without order_key, order_num and order_text,
-- webhooks.order_marks without order_key, order_num, order_text, prior_num
-- and prior_text, and webhooks.blocked_sequences without sequence_key (the
-- values at the provider's key_path and order_path: a customer id, an
-- e-mail). It also reads the tables and views added since 00111 ran it
-- (blocked_sequences, alerts, alert_state, out_of_order_pruned), which a
-- console or dashboard on a reader role could not read until an operator ran
-- it again (TestSecurityUpgradeKeepsGrants).
-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN
        SELECT DISTINCT r.rolname
        FROM pg_catalog.pg_attribute AS a
        CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS acl
        JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
        JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
        WHERE a.attrelid = 'webhooks.events'::pg_catalog.regclass
          AND a.attname = 'id'
          AND acl.privilege_type = 'SELECT'
          AND acl.grantee <> c.relowner
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_attribute AS pa
              CROSS JOIN LATERAL pg_catalog.aclexplode(pa.attacl) AS pacl
              WHERE pa.attrelid = a.attrelid AND pa.attname = 'payload'
                AND pacl.grantee = acl.grantee AND pacl.privilege_type = 'SELECT')
          AND NOT EXISTS (
              SELECT FROM pg_catalog.aclexplode(c.relacl) AS tacl
              WHERE tacl.grantee = acl.grantee AND tacl.privilege_type = 'SELECT')
          AND EXISTS (
              SELECT FROM pg_catalog.pg_proc AS p
              CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS facl
              WHERE p.oid = 'webhooks.find_gaps(text)'::pg_catalog.regprocedure
                AND facl.grantee = acl.grantee AND facl.privilege_type = 'EXECUTE')
        ORDER BY r.rolname
    LOOP
        PERFORM webhooks.grant_reader(v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
