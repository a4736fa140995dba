-- +goose Up
-- What operators read about ordered processing, kept cheap to read:
--
-- events_order_attention_idx holds the two kinds of event operators are
-- shown and that are rare by nature:
--   * ordered events that failed at least once and are pending again or
--     dead: the only candidates for the head of a blocked sequence
--     (webhooks.blocked_sequences);
--   * events processed out of order (late arrivals): the runner's
--     pginbox_out_of_order_total{provider} counts them at scrape time, plus
--     those prune() deleted (webhooks.out_of_order_pruned), so the counter
--     never goes down when old events are deleted.
-- A query for either kind implies the index's predicate, so each uses it.
-- Events that succeed at the first attempt in order never enter it, nor
-- does any event of a provider without ordering. It is one index, not one
-- per kind, because every INSERT into webhooks.events opens every index
-- of the table, locks it and prepares its predicate, whatever the row: each
-- index costs every delivery, ordered or not.
--
-- It is partial and empty on an existing table (every row reads order_key
-- NULL and out_of_order false), so building it only reads the table; to
-- avoid even that pause on a large table, create it CONCURRENTLY first with
-- the same statement (IF NOT EXISTS makes this migration skip it).
CREATE INDEX IF NOT EXISTS events_order_attention_idx ON webhooks.events (provider, order_key)
    WHERE out_of_order OR (order_key IS NOT NULL AND attempts > 0 AND status IN ('pending', 'dead'));

CREATE TABLE webhooks.out_of_order_pruned (
    provider   text        PRIMARY KEY,
    events     bigint      NOT NULL DEFAULT 0 CHECK (events >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON TABLE webhooks.out_of_order_pruned FROM PUBLIC;

COMMENT ON TABLE webhooks.out_of_order_pruned IS
  'Per provider: events processed out of order (events.out_of_order) that prune() has deleted since, so that '
  'their count plus the events still stored never goes down.';

-- Readers see the new table: run grant_reader again for each role it was
-- run for (told apart as in 00101).
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
