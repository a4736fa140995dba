-- +goose Up
-- Storage v2 renamed the table webhooks.events to webhooks.inbox, so this
-- function returned SETOF webhooks.inbox; it returns the rows of the view
-- webhooks.events again. A return type cannot be replaced: the function is
-- dropped and created, and the roles that could execute it can again.
-- +goose StatementBegin
DO $$
BEGIN
    PERFORM pg_catalog.set_config('pginbox.regrant', coalesce((
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ',')
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE p.oid = 'webhooks.leased_events(text, bigint[], integer[])'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner), ''), true);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION webhooks.leased_events(text, bigint[], integer[]);
-- begin sql/src/process/leased_events.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.leased_events returns the rows of the given events that are still
-- leased to worker at the given attempts, in the order given: what a worker
-- (or process_batch) hands its handler. Like claim(), it shows a worker the
-- payloads of what it holds and nothing else.
CREATE OR REPLACE FUNCTION webhooks.leased_events(worker text, event_ids bigint[], attempts integer[])
RETURNS SETOF webhooks.events
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF leased_events.worker IS NULL OR leased_events.event_ids IS NULL OR leased_events.attempts IS NULL THEN
        RAISE EXCEPTION 'pginbox: worker, event_ids and attempts must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF cardinality(leased_events.event_ids) <> cardinality(leased_events.attempts) THEN
        RAISE EXCEPTION 'pginbox: event_ids has % elements but attempts has %',
            cardinality(leased_events.event_ids), cardinality(leased_events.attempts)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The status test is written IS NOT DISTINCT FROM so the planner looks
    -- the ids up in the primary key (see complete()).
    RETURN QUERY
    SELECT e.*
    FROM unnest(leased_events.event_ids, leased_events.attempts) WITH ORDINALITY AS x(id, attempt, n)
    JOIN webhooks.inbox AS e ON e.id = x.id
    WHERE e.status IS NOT DISTINCT FROM 'processing'
      AND e.locked_by = leased_events.worker
      AND e.attempts = x.attempt
    ORDER BY x.n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.leased_events(text, bigint[], integer[]) IS
  'Returns the rows of event_ids that are still processing, locked by worker, at the matching attempts '
  '(parallel arrays), in the order given; events whose lease was lost are left out. Raises on NULL '
  'arguments or arrays of different lengths.';
REVOKE EXECUTE ON FUNCTION webhooks.leased_events(text, bigint[], integer[]) FROM PUBLIC;
-- end sql/src/process/leased_events.sql
-- +goose StatementBegin
DO $$
BEGIN
    IF pg_catalog.current_setting('pginbox.regrant') <> '' THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION webhooks.leased_events(text, bigint[], integer[]) TO ' || pg_catalog.current_setting('pginbox.regrant');
    END IF;
END;
$$;
-- +goose StatementEnd
