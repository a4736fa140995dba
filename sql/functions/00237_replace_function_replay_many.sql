-- +goose Up
-- begin sql/src/replay/replay_many.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.replay(event_ids bigint[], reason text) is replay(bigint, text) for
-- many events in one transaction (the console's bulk action): each listed
-- event is put back to pending, attempts reset to 0, runnable at once,
-- processed_at and last_error cleared, and audited in webhooks.replays with
-- the same columns as a single replay. Returns how many were put back.
--
-- Where the single replay raises, this one skips, so one odd id does not
-- undo the rest: an unknown id, an event being processed right now (its
-- worker holds the lease; it is skipped, not failed), an event whose payload
-- was pruned (nothing left to run). An id listed twice counts once; NULL
-- elements are ignored. A NULL or blank reason raises 22023; more than 10,000
-- ids raise 54000 (split the list).
--
-- Rows are locked FOR UPDATE in id order, so two bulk replays never deadlock
-- on each other. Not SKIP LOCKED: a row locked by a claim that is committing
-- is waited for and then re-checked, so it is skipped only if it really is
-- processing, and a row locked by a short write (complete, fail, an ingest
-- update, a single replay) is replayed from its committed state instead of
-- being dropped from the result. Rows that are processing in the snapshot are
-- filtered out before any lock is taken. A row a worker's batch holds by its
-- row lock (the row lock as the lease: pending, locked until the batch
-- commits) is waited for at most 3 s (lock_timeout); once any row has waited
-- that long the call takes the rows again with SKIP LOCKED, and every row
-- locked at that moment — the batch's, and any short write's — is skipped
-- as being processed, instead of the console waiting for the batch. The
-- table locks are taken first, outside that retry: one held for over 3 s
-- (behind a migration) raises lock_not_available (55P03) as it is.
-- actor, when given, names who asked (the console passes the operator: its
-- token's label or the client's address) and is recorded as replayed_by;
-- without it replayed_by is the session's role, as before.
CREATE OR REPLACE FUNCTION webhooks.replay(event_ids bigint[], reason text, actor text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '3s'
AS $$
#variable_conflict use_column
DECLARE
    c_max_ids CONSTANT integer := 10000;
    v_count   integer;
    v_ids     bigint[];
    v_by      text := coalesce(nullif(btrim(replay.actor, E' \t\r\n'), ''), session_user);
BEGIN
    IF replay.reason IS NULL OR btrim(replay.reason, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'pginbox: reason must not be %', CASE WHEN replay.reason IS NULL THEN 'null' ELSE 'blank' END
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Say why the events run again; it is recorded in webhooks.replays.';
    END IF;
    PERFORM webhooks._require_text('reason', replay.reason, 1000);
    PERFORM webhooks._require_text('actor', v_by, 200);
    IF replay.event_ids IS NULL THEN
        RAISE EXCEPTION 'pginbox: event_ids must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.cardinality(replay.event_ids) > c_max_ids THEN
        RAISE EXCEPTION 'pginbox: % event ids in one replay; the limit is %',
            pg_catalog.cardinality(replay.event_ids), c_max_ids
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Replay them in batches of at most 10000 ids.';
    END IF;

    LOCK TABLE webhooks.inbox, webhooks.replays IN ROW EXCLUSIVE MODE;
    -- Processed events already moved into history come back to the queue.
    PERFORM webhooks._history_restore(replay.event_ids);
    -- Lock the rows first (in id order; a row whose lock was waited for is
    -- re-checked against the filter), then write them in one statement.
    BEGIN
        v_ids := ARRAY(
            SELECT e.id
            FROM webhooks.inbox AS e
            WHERE e.id = ANY (replay.event_ids)
              AND e.status <> 'processing'
              AND e.payload IS NOT NULL
            ORDER BY e.id
            FOR UPDATE);
    EXCEPTION
        WHEN lock_not_available THEN
            -- A row stayed locked for over lock_timeout: a running batch
            -- holds it. Take the others, skip the locked ones.
            v_ids := ARRAY(
                SELECT e.id
                FROM webhooks.inbox AS e
                WHERE e.id = ANY (replay.event_ids)
                  AND e.status <> 'processing'
                  AND e.payload IS NOT NULL
                ORDER BY e.id
                FOR UPDATE SKIP LOCKED);
    END;

    -- A move into history under way when this call first looked has
    -- committed by now: bring those events back too, and lock them.
    IF pg_catalog.cardinality(v_ids) < pg_catalog.cardinality(replay.event_ids)
       AND webhooks._history_restore(ARRAY(SELECT x FROM pg_catalog.unnest(replay.event_ids) AS x
                                           WHERE NOT x = ANY (v_ids))) > 0 THEN
        v_ids := v_ids || ARRAY(
            SELECT e.id
            FROM webhooks.inbox AS e
            WHERE e.id = ANY (replay.event_ids)
              AND NOT e.id = ANY (v_ids)
              AND e.status <> 'processing'
              AND e.payload IS NOT NULL
            ORDER BY e.id
            FOR UPDATE SKIP LOCKED);
    END IF;

    -- The rows are locked: this statement sees them as they now are.
    WITH picked AS MATERIALIZED (
        SELECT e.id, e.status, e.attempts
        FROM webhooks.inbox AS e
        WHERE e.id = ANY (v_ids)
    ), audited AS (
        INSERT INTO webhooks.replays (event_id, reason, previous_status, previous_attempts, replayed_by)
        SELECT p.id, replay.reason, p.status, p.attempts, v_by
        FROM picked AS p
        ORDER BY p.id
    ), replayed AS (
        UPDATE webhooks.inbox AS e
        SET status       = 'pending',
            processed_at = NULL,
            attempts     = 0,
            run_after    = now(),
            last_error   = NULL,
            updated_at   = now(),
            -- A replay's runs start a trace of their own, linked to the delivery's.
            trace_link   = coalesce(e.trace_parent, e.trace_link),
            trace_parent = NULL
        FROM picked AS p
        WHERE e.id = p.id
        RETURNING e.id
    )
    SELECT pg_catalog.count(*)::integer INTO v_count FROM replayed;
    RETURN v_count;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.replay(bigint[], text, text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.replay(bigint[], text, text) IS
  'Bulk replay in one transaction: puts every listed event back to pending (attempts 0, runnable now, '
  'processed_at and last_error cleared), audited in webhooks.replays like replay(bigint, text, text) (replayed_by: actor when given, else the session role); returns how many. '
  'Skips unknown ids, events being processed right now (claimed, or held by a running batch''s row lock: once '
  'a row has waited 3 s, every row locked at that moment is skipped) and events whose payload was pruned; duplicates count '
  'once. Raises 22023 on a NULL/blank reason, 54000 on more than 10000 ids. Locks rows in id order (no deadlock '
  'between concurrent bulk replays). Owner only, like replay(bigint, text, text). Call it with a bigint[] argument '
  '(an untyped $1 is ambiguous between the two overloads).';
-- end sql/src/replay/replay_many.sql
