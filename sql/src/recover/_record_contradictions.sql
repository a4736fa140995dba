-- +goose StatementBegin
-- webhooks._record_contradictions re-reads recently written events and
-- records, in webhooks.contradictions, those whose state contradicts their
-- payload. Each (event, kind) is inserted once (ON CONFLICT DO NOTHING), so a
-- pass counts only what is new and re-reading a row never recounts it.
--
-- Which rows: those received since `since`, plus pending rows updated since
-- then (a redelivery that reconciled the payload of a pending event). The
-- statement is planned with `since` and the look-back's start as constants
-- (EXECUTE ... USING; `since` - 30 days is computed here, since timestamptz
-- minus an interval is not immutable and would leave the pruning to the
-- executor, after the planner has opened and locked every slice), so the
-- planner keeps only the day slices of history from `since` on (and, for
-- duplicate_terminal, the 30 days before it) and never opens the others:
-- the pass costs what recent traffic costs, however many days are kept
-- (TestWindowReadersScanOnlyTheirDays). reconcile() passes '-infinity' to
-- re-read everything. Rows whose payload was pruned have nothing to compare
-- and are skipped.
--
-- The kinds:
--   event_type_mismatch  the payload's own top-level event (else type, as Sume
--                        defines it) is a string that differs from the stored
--                        event_type. Only for dotted event types (job.completed,
--                        charge.succeeded, user.created: Sume, Stripe, Standard
--                        Webhooks), whose payload carries the type; GitHub and
--                        Shopify take their type from a header (push,
--                        orders/create) and their payloads' "type" fields are
--                        resource attributes, not event types.
--   error_missing        a job.failed or job.canceled without an error object
--                        (a job.canceled whose status is CANCELED, the status
--                        API's other spelling, carries none and is fine).
--   status_mismatch      the payload's status is not the one the type implies:
--                        job.completed with a status other than COMPLETED;
--                        job.failed whose status is not ERROR, or whose
--                        error.code is canceled (that is a cancellation);
--                        job.canceled whose status is neither CANCELED nor
--                        ERROR, or ERROR with an error.code other than canceled.
--   duplicate_terminal   a second terminal event (job.completed/failed/canceled)
--                        for a job that already reached one. A job is the
--                        payload's top-level job_id, else the external_id (Sume
--                        keys job webhooks on job_id, so a redelivery is the same
--                        row, never a second one). The earliest row (lowest id)
--                        received from 30 days before `since` on is the job's
--                        terminal event; each later one is flagged. Jobs are
--                        looked up in events_job_terminal_job_idx (the queue)
--                        and history_job_terminal_job_idx (each day slice of
--                        the look-back), with their exact expression: the job
--                        id when it is at most 255 bytes, else NULL. A
--                        terminal event whose job id is longer (a B-tree entry
--                        could not hold it) is not checked for this kind; the
--                        pass counts it in "jobs_unchecked".
CREATE OR REPLACE FUNCTION webhooks._record_contradictions(since timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_checked bigint;
    v_new     jsonb;
    v_long    bigint;
BEGIN
    EXECUTE $sql$
    WITH candidates AS MATERIALIZED (
        SELECT e.id, e.provider, e.external_id, e.event_type,
               CASE WHEN jsonb_typeof(e.payload -> 'event') = 'string' THEN e.payload ->> 'event'
                    WHEN jsonb_typeof(e.payload -> 'type') = 'string' THEN e.payload ->> 'type'
               END AS declared_type,
               e.payload ->> 'status' AS status,
               coalesce(jsonb_typeof(e.payload -> 'error') = 'object', false) AS has_error,
               CASE WHEN jsonb_typeof(e.payload -> 'error') = 'object'
                    THEN e.payload -> 'error' ->> 'code' END AS error_code,
               CASE WHEN octet_length(coalesce(e.payload ->> 'job_id', e.external_id)) <= 255
                    THEN coalesce(e.payload ->> 'job_id', e.external_id) END AS job
        FROM webhooks.events AS e
        WHERE e.payload IS NOT NULL
          AND (e.received_at >= $1
               OR (e.status = 'pending' AND e.updated_at >= $1))
    ), found (event_id, kind, detail) AS (
        SELECT c.id, 'event_type_mismatch',
               jsonb_build_object('event_type', c.event_type, 'payload_type', c.declared_type)
        FROM candidates AS c
        WHERE strpos(c.event_type, '.') > 0
          AND c.declared_type IS NOT NULL
          AND c.declared_type <> c.event_type
        UNION ALL
        SELECT c.id, 'error_missing',
               jsonb_build_object('event_type', c.event_type, 'status', c.status)
        FROM candidates AS c
        WHERE c.event_type IN ('job.failed', 'job.canceled')
          AND NOT c.has_error
          AND NOT (c.event_type = 'job.canceled' AND c.status IS NOT DISTINCT FROM 'CANCELED')
        UNION ALL
        SELECT c.id, 'status_mismatch',
               jsonb_build_object('event_type', c.event_type, 'status', c.status, 'error_code', c.error_code)
        FROM candidates AS c
        WHERE CASE c.event_type
                WHEN 'job.completed' THEN c.status IS NOT NULL AND c.status <> 'COMPLETED'
                WHEN 'job.failed' THEN c.status IS DISTINCT FROM 'ERROR'
                                    OR c.error_code IS NOT DISTINCT FROM 'canceled'
                WHEN 'job.canceled' THEN NOT (
                        c.status IS NOT DISTINCT FROM 'CANCELED'
                     OR (c.status IS NOT DISTINCT FROM 'ERROR'
                         AND (NOT c.has_error OR c.error_code IS NOT DISTINCT FROM 'canceled')))
                ELSE false
              END
        UNION ALL
        SELECT c.id, 'duplicate_terminal',
               jsonb_build_object('job', c.job, 'first_event_id', first.id, 'event_type', c.event_type,
                                  'first_event_type', first.event_type)
        FROM candidates AS c
        CROSS JOIN LATERAL (
            SELECT e2.id, e2.event_type
            FROM webhooks.events AS e2
            WHERE e2.provider = c.provider
              AND CASE WHEN octet_length(coalesce(e2.payload ->> 'job_id', e2.external_id)) <= 255
                       THEN coalesce(e2.payload ->> 'job_id', e2.external_id) END = c.job
              AND e2.event_type IN ('job.completed', 'job.failed', 'job.canceled')
              AND e2.id < c.id
              AND e2.received_at >= $2
            ORDER BY e2.id
            LIMIT 1
        ) AS first
        WHERE c.event_type IN ('job.completed', 'job.failed', 'job.canceled')
          AND c.job IS NOT NULL
    ), inserted AS (
        INSERT INTO webhooks.contradictions AS k (event_id, kind, detail)
        SELECT f.event_id, f.kind, f.detail
        FROM found AS f
        ON CONFLICT ON CONSTRAINT contradictions_event_id_kind_key DO NOTHING
        RETURNING k.kind
    )
    SELECT (SELECT count(*) FROM candidates),
           (SELECT count(*) FROM candidates AS c
            WHERE c.event_type IN ('job.completed', 'job.failed', 'job.canceled') AND c.job IS NULL),
           jsonb_build_object(
               'event_type_mismatch', count(*) FILTER (WHERE i.kind = 'event_type_mismatch'),
               'error_missing',       count(*) FILTER (WHERE i.kind = 'error_missing'),
               'status_mismatch',     count(*) FILTER (WHERE i.kind = 'status_mismatch'),
               'duplicate_terminal',  count(*) FILTER (WHERE i.kind = 'duplicate_terminal'))
    FROM inserted AS i$sql$
    INTO v_checked, v_long, v_new
    USING _record_contradictions.since, _record_contradictions.since - interval '30 days';

    RETURN jsonb_build_object('checked', v_checked, 'new', v_new, 'jobs_unchecked', v_long);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._record_contradictions(timestamptz) IS
  'Private (reconcile()): re-reads events received since `since` (and pending ones updated since) and records '
  'new contradictions between state and payload in webhooks.contradictions, once per (event, kind): '
  'event_type_mismatch, error_missing, status_mismatch, duplicate_terminal (an earlier terminal event of the job '
  'received from 30 days before since on; jobs looked up by a job id of at most 255 bytes, as '
  'events_job_terminal_job_idx holds them). Returns {"checked": rows read, "new": {kind: newly '
  'recorded}, "jobs_unchecked": terminal job events read whose job id is longer, not checked for duplicate_terminal}.';
REVOKE EXECUTE ON FUNCTION webhooks._record_contradictions(timestamptz) FROM PUBLIC;
