-- +goose Up
-- Values the sequence index cannot hold.
--
-- webhooks.order_skipped counts, per provider and reason, the events of an
-- ordered provider left unordered because a value at key_path or
-- order_path could not be indexed (a key or a text order value over 255
-- bytes, a number over 255 bytes stored): such an event is stored and runs
-- unordered instead of failing its delivery (_order_values_at()). Written
-- at ingest (_order_ingest(), which also logs each such event with RAISE
-- LOG: its provider, external_id and reason) and by set_ordering() for the
-- pending events it reads again (one LOG line per call).
CREATE TABLE webhooks.order_skipped (
    provider         text        NOT NULL,
    reason           text        NOT NULL,
    events           bigint      NOT NULL DEFAULT 0 CHECK (events >= 0),
    first_at         timestamptz NOT NULL DEFAULT now(),
    last_at          timestamptz NOT NULL DEFAULT now(),
    last_external_id text,
    last_detail      text,
    PRIMARY KEY (provider, reason)
);
REVOKE ALL ON TABLE webhooks.order_skipped FROM PUBLIC;

COMMENT ON TABLE webhooks.order_skipped IS
  'Per ordered provider and reason (key, order text, order number): events left unordered because that value '
  'was too large to index; last_external_id and last_detail (its size) name the latest.';

-- Readers see the new table: run grant_reader again for each role it was
-- run for (told apart as in 00102).
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
