-- +goose StatementBegin
-- webhooks._events_write makes the view webhooks.events writable, for
-- scripts and tests written when it was a table. pginbox's own functions
-- never use it: they write webhooks.keys, webhooks.inbox and
-- webhooks.history directly. One row at a time, so it is slow.
--   INSERT  stores the key in webhooks.keys (a stored key or body raises
--           unique_violation, as the table's unique keys did) and the event
--           in webhooks.inbox, whatever its status; move_history() moves a
--           processed one into history later.
--   UPDATE  changes the event where it is: the queue, or its day of history
--           (a processed event set back to another status returns to the
--           queue); the key follows a changed provider, external_id,
--           received_at or body_sha256.
--   DELETE  deletes the event and its key, with its failed attempts,
--           replays and contradictions, as deleting the table's row did.
CREATE OR REPLACE FUNCTION webhooks._events_write()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id  bigint;
    v_seq bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        v_id := coalesce(NEW.id, nextval('webhooks.events_id_seq'));
        NEW.id := v_id;
        INSERT INTO webhooks.keys (provider, external_id, event_id, received_at, body_sha256)
        VALUES (NEW.provider, NEW.external_id, v_id, coalesce(NEW.received_at, now()), NEW.body_sha256);
        INSERT INTO webhooks.inbox (id, provider, external_id, event_type, status, payload, source, received_at,
                                    revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
                                    run_after, locked_by, locked_until, last_error, payload_pruned_at,
                                    body_sha256, order_key, order_num, order_text, order_held, out_of_order,
                                    trace_parent, trace_link)
        VALUES (v_id, NEW.provider, NEW.external_id, NEW.event_type, NEW.status, NEW.payload, NEW.source,
                NEW.received_at, NEW.revision, NEW.updated_at, NEW.claimed_at, NEW.processed_at, NEW.attempts,
                NEW.max_attempts, NEW.run_after, NEW.locked_by, NEW.locked_until, NEW.last_error,
                NEW.payload_pruned_at, NEW.body_sha256, NEW.order_key, NEW.order_num, NEW.order_text,
                NEW.order_held, NEW.out_of_order, NEW.trace_parent, NEW.trace_link)
        RETURNING seq INTO v_seq;
        NEW.seq := v_seq;
        RETURN NEW;
    END IF;

    IF TG_OP = 'DELETE' THEN
        DELETE FROM webhooks.inbox AS e WHERE e.id = OLD.id;
        IF NOT FOUND THEN
            DELETE FROM webhooks.history AS h WHERE h.id = OLD.id AND h.received_at = OLD.received_at;
        END IF;
        DELETE FROM webhooks.keys AS k
        WHERE k.provider = OLD.provider AND k.external_id = OLD.external_id AND k.event_id = OLD.id;
        -- What the table's foreign keys deleted with the row.
        DELETE FROM webhooks.event_errors AS x WHERE x.event_id = OLD.id;
        DELETE FROM webhooks.replays AS r WHERE r.event_id = OLD.id;
        DELETE FROM webhooks.contradictions AS c WHERE c.event_id = OLD.id;
        RETURN OLD;
    END IF;

    -- UPDATE
    IF (NEW.provider, NEW.external_id, NEW.received_at, NEW.body_sha256)
       IS DISTINCT FROM (OLD.provider, OLD.external_id, OLD.received_at, OLD.body_sha256) THEN
        UPDATE webhooks.keys AS k
        SET provider = NEW.provider, external_id = NEW.external_id, received_at = NEW.received_at,
            body_sha256 = NEW.body_sha256
        WHERE k.provider = OLD.provider AND k.external_id = OLD.external_id AND k.event_id = OLD.id;
    END IF;
    UPDATE webhooks.inbox AS e
    SET (id, provider, external_id, event_type, status, payload, source, received_at,
         revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
         run_after, locked_by, locked_until, last_error, payload_pruned_at,
         body_sha256, order_key, order_num, order_text, order_held, out_of_order,
         trace_parent, trace_link)
      = (NEW.id, NEW.provider, NEW.external_id, NEW.event_type, NEW.status, NEW.payload, NEW.source,
         NEW.received_at, NEW.revision, NEW.updated_at, NEW.claimed_at, NEW.processed_at, NEW.attempts,
         NEW.max_attempts, NEW.run_after, NEW.locked_by, NEW.locked_until, NEW.last_error,
         NEW.payload_pruned_at, NEW.body_sha256, NEW.order_key, NEW.order_num, NEW.order_text,
         NEW.order_held, NEW.out_of_order, NEW.trace_parent, NEW.trace_link)
    WHERE e.id = OLD.id;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    IF NEW.status = 'processed' THEN
        PERFORM webhooks._history_slice((NEW.received_at AT TIME ZONE 'UTC')::date);
        UPDATE webhooks.history AS h
        SET (id, provider, external_id, event_type, status, payload, source, received_at,
             revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
             run_after, locked_by, locked_until, last_error, payload_pruned_at,
             body_sha256, order_key, order_num, order_text, order_held, out_of_order,
             trace_parent, trace_link)
          = (NEW.id, NEW.provider, NEW.external_id, NEW.event_type, NEW.status, NEW.payload, NEW.source,
             NEW.received_at, NEW.revision, NEW.updated_at, NEW.claimed_at, NEW.processed_at, NEW.attempts,
             NEW.max_attempts, NEW.run_after, NEW.locked_by, NEW.locked_until, NEW.last_error,
             NEW.payload_pruned_at, NEW.body_sha256, NEW.order_key, NEW.order_num, NEW.order_text,
             NEW.order_held, NEW.out_of_order, NEW.trace_parent, NEW.trace_link)
        WHERE h.id = OLD.id AND h.received_at = OLD.received_at;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        RETURN NEW;
    END IF;
    -- Back to the queue.
    DELETE FROM webhooks.history AS h WHERE h.id = OLD.id AND h.received_at = OLD.received_at;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhooks.inbox (id, provider, external_id, event_type, status, payload, source, received_at,
                                revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
                                run_after, locked_by, locked_until, last_error, payload_pruned_at,
                                body_sha256, order_key, order_num, order_text, order_held, out_of_order,
                                trace_parent, trace_link)
    VALUES (NEW.id, NEW.provider, NEW.external_id, NEW.event_type, NEW.status, NEW.payload, NEW.source,
            NEW.received_at, NEW.revision, NEW.updated_at, NEW.claimed_at, NEW.processed_at, NEW.attempts,
            NEW.max_attempts, NEW.run_after, NEW.locked_by, NEW.locked_until, NEW.last_error,
            NEW.payload_pruned_at, NEW.body_sha256, NEW.order_key, NEW.order_num, NEW.order_text,
            NEW.order_held, NEW.out_of_order, NEW.trace_parent, NEW.trace_link);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._events_write() IS
  'Private trigger (events_write, INSTEAD OF on the view webhooks.events): writes an INSERT, UPDATE or DELETE on the '
  'view to webhooks.keys, webhooks.inbox and webhooks.history, for scripts written when webhooks.events was a table. '
  'One row at a time; pginbox''s functions never use it.';
REVOKE EXECUTE ON FUNCTION webhooks._events_write() FROM PUBLIC;

DROP TRIGGER IF EXISTS events_write ON webhooks.events;
CREATE TRIGGER events_write
    INSTEAD OF INSERT OR UPDATE OR DELETE ON webhooks.events
    FOR EACH ROW
    EXECUTE FUNCTION webhooks._events_write();
