-- +goose Up
-- begin sql/src/store/events.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.events: every event stored, the queue (webhooks.inbox) and the
-- processed history by day (webhooks.history) together, with the columns the
-- table of the same name had before storage v2, in the same order. Its row
-- type is what sql: handlers take and claim() returns.
-- The history branch states its status
-- as a constant, so a filter on any other status removes that branch at plan
-- time: the queue's readers never open a slice.
CREATE OR REPLACE VIEW webhooks.events AS
SELECT i.id, i.provider, i.external_id, i.event_type, i.status, i.payload, i.source, i.received_at,
       i.revision, i.updated_at, i.claimed_at, i.processed_at, i.attempts, i.max_attempts, i.run_after,
       i.locked_by, i.locked_until, i.last_error, i.payload_pruned_at, i.seq, i.body_sha256,
       i.order_key, i.order_num, i.order_text, i.order_held, i.out_of_order, i.trace_parent, i.trace_link
FROM webhooks.inbox AS i
UNION ALL
SELECT h.id, h.provider, h.external_id, h.event_type, 'processed'::text, h.payload, h.source, h.received_at,
       h.revision, h.updated_at, h.claimed_at, h.processed_at, h.attempts, h.max_attempts, h.run_after,
       h.locked_by, h.locked_until, h.last_error, h.payload_pruned_at, h.seq, h.body_sha256,
       h.order_key, h.order_num, h.order_text, h.order_held, h.out_of_order, h.trace_parent, h.trace_link
FROM webhooks.history AS h;

-- Its defaults are the table's, for the INSTEAD OF triggers that keep it
-- writable (_events_write.sql).
ALTER VIEW webhooks.events ALTER COLUMN id SET DEFAULT nextval('webhooks.events_id_seq');
ALTER VIEW webhooks.events ALTER COLUMN status SET DEFAULT 'pending';
ALTER VIEW webhooks.events ALTER COLUMN source SET DEFAULT 'webhook';
ALTER VIEW webhooks.events ALTER COLUMN received_at SET DEFAULT now();
ALTER VIEW webhooks.events ALTER COLUMN revision SET DEFAULT 1;
ALTER VIEW webhooks.events ALTER COLUMN updated_at SET DEFAULT now();
ALTER VIEW webhooks.events ALTER COLUMN attempts SET DEFAULT 0;
ALTER VIEW webhooks.events ALTER COLUMN max_attempts SET DEFAULT 25;
ALTER VIEW webhooks.events ALTER COLUMN run_after SET DEFAULT now();
ALTER VIEW webhooks.events ALTER COLUMN order_held SET DEFAULT false;
ALTER VIEW webhooks.events ALTER COLUMN out_of_order SET DEFAULT false;

COMMENT ON VIEW webhooks.events IS 'Every webhook event stored, exactly once per (provider, external_id): webhooks.inbox (the queue) and webhooks.history (processed, by day) together. Writable for compatibility (INSTEAD OF triggers, slow); pginbox''s own functions write the tables.';

REVOKE ALL ON webhooks.events FROM PUBLIC;

-- The readers of the table (renamed webhooks.inbox) read the view, with the
-- same columns.
-- +goose StatementBegin
DO $$
DECLARE
    v_grant record;
BEGIN
    FOR v_grant IN
        SELECT DISTINCT r.rolname, a.attname
        FROM pg_catalog.pg_attribute AS a
        CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS acl
        JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
        JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
        WHERE a.attrelid = 'webhooks.inbox'::pg_catalog.regclass
          AND acl.privilege_type = 'SELECT'
          AND acl.grantee <> c.relowner
    LOOP
        EXECUTE pg_catalog.format('GRANT SELECT (%I) ON webhooks.events TO %I', v_grant.attname, v_grant.rolname);
    END LOOP;
    FOR v_grant IN
        SELECT DISTINCT r.rolname
        FROM pg_catalog.pg_class AS c
        CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS acl
        JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
        WHERE c.oid = 'webhooks.inbox'::pg_catalog.regclass
          AND acl.privilege_type = 'SELECT'
          AND acl.grantee <> c.relowner
    LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON webhooks.events TO %I', v_grant.rolname);
    END LOOP;
END;
$$;
-- +goose StatementEnd
-- end sql/src/store/events.sql
