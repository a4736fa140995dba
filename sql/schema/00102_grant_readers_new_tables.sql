-- +goose Up
-- grant_reader gives a role SELECT on the tables and views that exist when it
-- runs. The roles it was run for before this release's new tables
-- (backfill_checkpoints, event_errors, paused_providers, provider_pauses,
-- and any other added since) could not read them until an operator ran it
-- again, so a console or dashboard on a reader role failed on its first
-- query of one. This migration runs it again for each of them.
--
-- A reader is told by what grant_reader gives and nothing else does: a
-- column-level SELECT on webhooks.events (every column but the payload's),
-- given to the role itself, not through a role it belongs to. The owner is
-- left alone. grant_reader is idempotent, and it keeps the hidden columns
-- hidden (TestSecurityUpgradeKeepsGrants).
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
          AND NOT pg_catalog.has_column_privilege(acl.grantee, 'webhooks.events', 'payload', 'SELECT')
        ORDER BY r.rolname
    LOOP
        PERFORM webhooks.grant_reader(v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
