-- +goose Up
-- grant_reader gives a role SELECT on the tables and views that exist when it
-- runs. The roles it was run for before this release's new tables
-- (backfill_checkpoints, event_errors, paused_providers, provider_pauses,
-- and any other added since) could not read them until an operator ran it
-- again, so a console or dashboard on a reader role failed on its first
-- query of one. This migration runs it again for each of them.
--
-- A reader is told by what grant_reader gives and nothing else does, all
-- granted to the role itself: EXECUTE on find_gaps(text), and a
-- column-level SELECT on webhooks.events without the payload column and
-- without a table-level SELECT. A role an operator gave a few columns for a
-- dashboard is not one. The owner is left alone. grant_reader is
-- idempotent and keeps the hidden columns hidden; it also gives back any
-- table an operator revoked from a reader (TestSecurityUpgradeKeepsGrants).
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
          -- no payload column and no table-level SELECT of its own
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_attribute AS pa
              CROSS JOIN LATERAL pg_catalog.aclexplode(pa.attacl) AS pacl
              WHERE pa.attrelid = a.attrelid AND pa.attname = 'payload'
                AND pacl.grantee = acl.grantee AND pacl.privilege_type = 'SELECT')
          AND NOT EXISTS (
              SELECT FROM pg_catalog.aclexplode(c.relacl) AS tacl
              WHERE tacl.grantee = acl.grantee AND tacl.privilege_type = 'SELECT')
          -- and find_gaps, as grant_reader gives it
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
