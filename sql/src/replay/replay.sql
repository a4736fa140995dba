-- +goose StatementBegin
-- webhooks.replay puts an event back to pending on purpose: the only way a
-- processed event runs again. Every replay is audited in webhooks.replays.
-- A processing event cannot be replayed (its worker still holds the lease),
-- nor one whose payload was pruned (there is nothing left to run). Neither
-- can an event a worker's batch holds right now by its row lock (the row
-- lock as the lease: still pending, but locked until the batch commits):
-- the row lock is waited for at most 3 s (lock_timeout), long enough for any
-- short write (a completion, an ingest update), and then the call raises
-- object_in_use like the processing case instead of waiting for the batch.
-- The 3 s applies to every lock the call takes (it replaces the caller's
-- lock_timeout while it runs): a table lock held longer, behind a migration,
-- raises lock_not_available (55P03) as it is.
-- actor, when given, names who asked (the console passes the operator: its
-- token's label or the client's address) and is recorded as replayed_by;
-- without it replayed_by is the session's role, as before.
CREATE OR REPLACE FUNCTION webhooks.replay(event_id bigint, reason text, actor text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '3s'
AS $$
#variable_conflict use_column
DECLARE
    v_event webhooks.inbox%ROWTYPE;
    v_day   date;
    v_by    text := coalesce(nullif(btrim(replay.actor, E' \t\r\n'), ''), session_user);
BEGIN
    PERFORM webhooks._require_text('reason', replay.reason, 1000);
    PERFORM webhooks._require_text('actor', v_by, 200);

    -- The table locks first, outside the handler below, so that only a row
    -- lock held too long reads as "being processed".
    LOCK TABLE webhooks.inbox, webhooks.replays IN ROW EXCLUSIVE MODE;
    -- A processed event already moved into history comes back to the queue.
    -- Twice at most: a move into history under way when this call looked
    -- (its row lock waited for below) has committed by the second look.
    FOR v_try IN 1..2 LOOP
        PERFORM webhooks._history_restore(ARRAY[replay.event_id]);
        BEGIN
            SELECT * INTO v_event FROM webhooks.inbox AS e WHERE e.id = replay.event_id FOR UPDATE;
        EXCEPTION
            WHEN lock_not_available THEN
                RAISE EXCEPTION 'pginbox: event % is being processed right now (a running batch holds its row lock); replay it once it is done',
                    replay.event_id
                    USING ERRCODE = 'object_in_use';
        END;
        EXIT WHEN v_event.id IS NOT NULL;
    END LOOP;
    IF v_event.id IS NULL THEN
        SELECT d.day INTO v_day
        FROM webhooks.history_days AS d
        WHERE d.state = 'dropped' AND replay.event_id BETWEEN d.min_id AND d.max_id
        ORDER BY d.day
        LIMIT 1;
        IF v_day IS NOT NULL THEN
            RAISE EXCEPTION 'pginbox: event % cannot be replayed: prune() dropped its day (%) of history after keep_payload; its key still dedupes',
                replay.event_id, v_day
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RAISE EXCEPTION 'pginbox: no event with id %', replay.event_id
            USING ERRCODE = 'no_data_found';
    END IF;
    IF v_event.status = 'processing' THEN
        RAISE EXCEPTION 'pginbox: event % is being processed by % until %; replay it once it is done',
            replay.event_id, v_event.locked_by, v_event.locked_until
            USING ERRCODE = 'object_in_use';
    END IF;
    IF v_event.payload IS NULL THEN
        RAISE EXCEPTION 'pginbox: event % cannot be replayed: its payload was pruned at %',
            replay.event_id, v_event.payload_pruned_at
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    INSERT INTO webhooks.replays (event_id, reason, previous_status, previous_attempts, replayed_by)
    VALUES (replay.event_id, replay.reason, v_event.status, v_event.attempts, v_by);

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
    WHERE e.id = replay.event_id;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.replay(bigint, text, text) IS
  'Puts an event back to pending (attempts reset, run now) on purpose and records who and why in '
  'webhooks.replays (replayed_by: actor when given, else the session role); the only way a processed or dead event runs again. Raises for an unknown id, an event '
  'being processed (claimed, or held by a running batch''s row lock for over 3 s: SQLSTATE 55006), a pruned '
  'payload or a blank reason.';
REVOKE EXECUTE ON FUNCTION webhooks.replay(bigint, text, text) FROM PUBLIC;
