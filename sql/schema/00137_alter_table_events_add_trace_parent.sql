-- +goose Up
-- webhooks.events.trace_parent is the W3C traceparent
-- (00-<trace id>-<span id>-<flags>) of the span that stored the event: the
-- runner's server span of the delivery, when OpenTelemetry tracing is on.
-- Every handler run of the event starts its pginbox.process span as a child
-- of it, so the run lands in the delivery's trace however much later and on
-- whichever runner it happens. NULL when tracing is off, for backfilled
-- events and for other stacks that pass none (their runs start a trace of
-- their own). Not a secret: trace and span ids only.
--
-- webhooks.events.trace_link is where a replay moves trace_parent: the runs
-- after a replay start a trace of their own that links to the delivery's,
-- rather than growing the delivery's trace.
--
-- Adding nullable columns is instant; the CHECKs are NOT VALID because every
-- existing row is NULL (no scan). About 56 bytes a row when set.
ALTER TABLE webhooks.events
    ADD COLUMN trace_parent text,
    ADD COLUMN trace_link text,
    ADD CONSTRAINT events_trace_parent_check
        CHECK (trace_parent IS NULL OR octet_length(trace_parent) <= 128) NOT VALID,
    ADD CONSTRAINT events_trace_link_check
        CHECK (trace_link IS NULL OR octet_length(trace_link) <= 128) NOT VALID;

COMMENT ON COLUMN webhooks.events.trace_parent IS
  'W3C traceparent of the delivery''s span (ingest_webhook(trace_parent => ...)); each handler run''s '
  'pginbox.process span is its child, so the whole life of the event is one trace. NULL when tracing is off '
  'and after a replay.';

COMMENT ON COLUMN webhooks.events.trace_link IS
  'The delivery''s W3C traceparent once a replay moved it out of trace_parent: the runs after a replay start '
  'a trace of their own that links to it.';

-- Roles given the readable columns of events one by one (grant_reader) may
-- read these too: it holds no payload data.
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
        WHERE a.attrelid = 'webhooks.events'::regclass
          AND a.attname = 'id'
          AND acl.privilege_type = 'SELECT'
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT SELECT (trace_parent, trace_link) ON webhooks.events TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
