-- +goose StatementBegin
-- webhooks.ingest_webhook stores one delivery exactly once. The primary key
-- of webhooks.keys (provider, external_id) and a single INSERT ... ON CONFLICT
-- decide, never a read, so any number of concurrent deliveries of the same id yield one row
-- and exactly one 'created'. A redelivery of an event that is still pending
-- and carries a different payload reconciles the payload ('updated');
-- anything else ('duplicate') writes nothing (normally not even a row lock).
--
-- A new key is one INSERT into webhooks.keys (ON CONFLICT DO NOTHING: no row
-- back means another delivery stored it first) and one into webhooks.inbox,
-- the queue. A known key is looked up by the key, then the event by its id in
-- the queue: an event no longer there is processed, so a 'duplicate'. Keys
-- stay after the event's history is dropped (prune keep_payload), until
-- keep_keys. While keys of events stored before storage v2 are still being
-- copied into webhooks.keys, the queue keeps its old unique key
-- (events_provider_external_id_key, dropped by move_history() once they are
-- all copied), and a key not found also looks there: a catalog look-up
-- tells, so ingest reads no other table for it.
--
-- body_sha256 (NULL by default) is for keys taken from a header the provider
-- does not sign (github, shopify, sume keyed by X-Sume-Event-Id): the caller
-- passes sha256() of the exact raw body it verified. Then the key proves
-- nothing, so
--   * a body already stored for the provider under another key is a
--     'duplicate' of that event (a captured delivery replayed under a fresh
--     id, or a provider re-sending one event under a new id, runs once);
--   * a known key is always a 'duplicate', never 'updated': its payload is
--     never replaced. A different body under a known key also raises a
--     NOTICE 'pginbox: different body under a stored key' (DETAIL names the
--     event) so the caller can count it apart from plain duplicates.
-- Both unique indexes of webhooks.keys (key, and provider + digest) decide in
-- one INSERT ... ON CONFLICT DO NOTHING with no conflict target; a follow-up look-up by key,
-- then by digest, names the event that was there first. A row once stored
-- with a digest is never 'updated' by any later call, digest or not.
--
-- trace_parent (NULL by default) is the W3C traceparent of the caller's span
-- for this delivery (the runner's server span, when tracing is on). It is
-- stored with a new event only (a redelivery or duplicate keeps the first
-- one), and a value that is not a well-formed traceparent is stored as NULL,
-- never refused: tracing never costs a delivery.
--
-- An ordered provider's delivery waits for its sequence's lock (held by
-- whatever decides which event of the sequence runs next) one second at
-- most, or until pginbox.order_wait_until (a timestamptz, set by
-- ingest_batch so that one call waits 250 ms in all). Past it, nothing is stored and it
-- raises SQLSTATE 55P03 (lock_not_available) naming the sequence, for the
-- sender to retry; ingest_batch (pginbox.order_busy 'return') gets the
-- outcome 'busy' instead. A key or order value too large to index leaves
-- the event unordered (counted in webhooks.order_skipped), never fails it.
--
-- Isolation: under REPEATABLE READ or SERIALIZABLE, a delivery that conflicts
-- with a row committed after the caller's snapshot was taken fails with
-- SQLSTATE 40001; retry the transaction (it will then see a 'duplicate').
CREATE OR REPLACE FUNCTION webhooks.ingest_webhook(
    provider    text,
    external_id text,
    event_type  text,
    payload     jsonb,
    source      text    DEFAULT 'webhook',
    notify      boolean DEFAULT false,
    body_sha256 bytea   DEFAULT NULL,
    trace_parent text   DEFAULT NULL
)
RETURNS TABLE (event_id bigint, outcome text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_id       bigint;
    v_revision integer;
    v_changes  boolean;
    v_okey     text;
    v_onum     numeric;
    v_otext    text;
    v_held     boolean;
    v_busy     boolean := false;
    v_ordered  boolean := false;
    v_oldkey   text;
    v_until    timestamptz;
    v_trace    text;
    v_recv     timestamptz;
    v_legacy   boolean;
    v_new      bigint;
BEGIN
    IF ingest_webhook.trace_parent IS NOT NULL
       AND ingest_webhook.trace_parent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        v_trace := ingest_webhook.trace_parent;
    END IF;

    -- The hot path checks every argument in one expression; only a bad
    -- argument pays for the helper that names it in the error.
    IF ingest_webhook.provider IS NULL OR octet_length(ingest_webhook.provider) > 64
       OR btrim(ingest_webhook.provider, E' \t\r\n') = ''
       OR ingest_webhook.external_id IS NULL OR octet_length(ingest_webhook.external_id) > 255
       OR btrim(ingest_webhook.external_id, E' \t\r\n') = ''
       OR ingest_webhook.event_type IS NULL OR octet_length(ingest_webhook.event_type) > 255
       OR btrim(ingest_webhook.event_type, E' \t\r\n') = ''
       OR ingest_webhook.source IS NULL OR octet_length(ingest_webhook.source) > 32
       OR btrim(ingest_webhook.source, E' \t\r\n') = '' THEN
        PERFORM webhooks._require_text('provider', ingest_webhook.provider, 64);
        PERFORM webhooks._require_text('external_id', ingest_webhook.external_id, 255);
        PERFORM webhooks._require_text('event_type', ingest_webhook.event_type, 255);
        PERFORM webhooks._require_text('source', ingest_webhook.source, 32);
    END IF;
    IF ingest_webhook.payload IS NULL OR jsonb_typeof(ingest_webhook.payload) <> 'object' THEN
        RAISE EXCEPTION 'pginbox: payload must be a JSON object, got %',
            coalesce(jsonb_typeof(ingest_webhook.payload), 'SQL NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF ingest_webhook.body_sha256 IS NOT NULL THEN
        IF octet_length(ingest_webhook.body_sha256) <> 32 THEN
            RAISE EXCEPTION 'pginbox: body_sha256 must be the 32-byte SHA-256 of the raw body, got % bytes',
                octet_length(ingest_webhook.body_sha256)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass sha256(<raw body bytes>), or NULL for a key taken from the signed body.';
        END IF;

        -- An unsigned key: never 'updated'. The loop only repeats when a
        -- concurrent prune deletes the key between two statements.
        FOR v_try IN 1..3 LOOP
            -- 1. Look, without locking: a known key, then a known body, is a
            --    duplicate, read-only. Neither look decides that the delivery
            --    is new: only the unique indexes of webhooks.keys do, in
            --    step 2.
            SELECT k.event_id, k.received_at, k.body_sha256 <> ingest_webhook.body_sha256
            INTO v_id, v_recv, v_changes
            FROM webhooks.keys AS k
            WHERE k.provider = ingest_webhook.provider AND k.external_id = ingest_webhook.external_id;
            IF v_id IS NULL THEN
                SELECT k.event_id, false INTO v_id, v_changes
                FROM webhooks.keys AS k
                WHERE k.provider = ingest_webhook.provider AND k.body_sha256 = ingest_webhook.body_sha256;
            END IF;
            IF v_id IS NULL AND v_try = 1 THEN
                v_legacy := pg_catalog.to_regclass('webhooks.events_provider_external_id_key') IS NOT NULL;
            END IF;
            IF v_id IS NULL AND v_legacy THEN
                -- Keys of events stored before storage v2 not copied yet.
                SELECT e.id, false INTO v_id, v_changes
                FROM webhooks.inbox AS e
                WHERE e.provider = ingest_webhook.provider
                  AND (e.external_id = ingest_webhook.external_id OR e.body_sha256 = ingest_webhook.body_sha256)
                LIMIT 1;
            END IF;
            IF v_id IS NOT NULL AND v_changes IS NULL THEN
                -- The key was stored from a signed body: compare payloads
                -- (for the NOTICE only) while the event is in the queue.
                -- Never in history: prune() holds it locked while it drops
                -- days, and a delivery must not wait for that.
                SELECT e.payload IS NOT NULL AND e.payload <> ingest_webhook.payload INTO v_changes
                FROM webhooks.inbox AS e
                WHERE e.id = v_id;
            END IF;

            -- 2. Neither is known: one insert into webhooks.keys, which any
            --    unique violation (the key or the body) turns into nothing.
            IF v_id IS NULL THEN
                IF v_held IS NULL THEN
                    v_held := false;
                    IF ingest_webhook.provider = ANY (webhooks._ordered_providers()) THEN
                        v_until := nullif(pg_catalog.current_setting('pginbox.order_wait_until', true), '')::timestamptz;
                        SELECT o.order_key, o.order_num, o.order_text, o.order_held, o.order_busy
                        INTO v_okey, v_onum, v_otext, v_held, v_busy
                        FROM webhooks._order_ingest(ingest_webhook.provider, ingest_webhook.external_id,
                                                    ingest_webhook.payload, v_until) AS o;
                    END IF;
                END IF;
                IF v_busy THEN
                    -- The sequence's lock stayed held elsewhere past the
                    -- wait: nothing is stored.
                    IF pg_catalog.current_setting('pginbox.order_busy', true) = 'return' THEN
                        outcome := 'busy';
                        RETURN NEXT;
                        RETURN;
                    END IF;
                    PERFORM webhooks._order_busy(ingest_webhook.provider, ingest_webhook.external_id, v_okey);
                END IF;
                INSERT INTO webhooks.keys AS k (provider, external_id, event_id, received_at, body_sha256)
                VALUES (ingest_webhook.provider, ingest_webhook.external_id,
                        nextval('webhooks.events_id_seq'), now(), ingest_webhook.body_sha256)
                ON CONFLICT DO NOTHING
                RETURNING k.event_id INTO v_id;

                IF v_id IS NOT NULL THEN
                    INSERT INTO webhooks.inbox (id, provider, external_id, event_type, payload, source, body_sha256,
                                                order_key, order_num, order_text, order_held, trace_parent)
                    VALUES (v_id, ingest_webhook.provider, ingest_webhook.external_id, ingest_webhook.event_type,
                            ingest_webhook.payload, ingest_webhook.source, ingest_webhook.body_sha256,
                            v_okey, v_onum, v_otext, v_held, v_trace);
                    IF v_held THEN
                        PERFORM webhooks._order_settle(ingest_webhook.provider, v_okey);
                    END IF;
                    IF ingest_webhook.notify THEN
                        PERFORM pg_notify('webhooks_events', ingest_webhook.provider);
                    END IF;
                    event_id := v_id;
                    outcome  := 'created';
                    RETURN NEXT;
                    RETURN;
                END IF;
                -- 3. A concurrent delivery of the key or the body got there
                --    first. ON CONFLICT waited for it, so it is committed and
                --    visible to the next round's fresh snapshots.
                CONTINUE;
            END IF;

            IF coalesce(v_changes, false) THEN
                RAISE NOTICE 'pginbox: different body under a stored key'
                    USING DETAIL = format('provider %s, external_id %s, event_id %s: the key is not signed, '
                                          'so the stored payload was kept', ingest_webhook.provider,
                                          ingest_webhook.external_id, v_id);
            END IF;
            event_id := v_id;
            outcome  := 'duplicate';
            RETURN NEXT;
            RETURN;
        END LOOP;

        RAISE EXCEPTION 'pginbox: could not ingest %/%: the key vanished three times while deduplicating',
            ingest_webhook.provider, ingest_webhook.external_id
            USING ERRCODE = 'serialization_failure';
    END IF;

    -- A key from the signed body (no digest).
    FOR v_try IN 1..3 LOOP
        -- 1. Look, without locking. A known key whose event would not change
        --    (no longer in the queue or no longer pending, stored under an
        --    unsigned key, or the same payload) is a duplicate and ends
        --    here: a read-only transaction (no xid, no WAL, no flush at
        --    commit) that never waits on another delivery's row lock. The
        --    look never decides that a key is new: only the primary key of
        --    webhooks.keys does, in step 2.
        v_id := NULL;
        v_changes := NULL;
        v_oldkey := NULL;
        SELECT k.event_id INTO v_id
        FROM webhooks.keys AS k
        WHERE k.provider = ingest_webhook.provider AND k.external_id = ingest_webhook.external_id;
        IF v_id IS NULL AND v_try = 1 THEN
            v_legacy := pg_catalog.to_regclass('webhooks.events_provider_external_id_key') IS NOT NULL;
        END IF;
        IF v_id IS NULL AND v_legacy THEN
            -- Keys of events stored before storage v2 not copied yet.
            SELECT e.id INTO v_id
            FROM webhooks.inbox AS e
            WHERE e.provider = ingest_webhook.provider AND e.external_id = ingest_webhook.external_id;
        END IF;
        IF v_id IS NOT NULL THEN
            SELECT (e.status = 'pending' AND e.body_sha256 IS NULL
                    AND e.payload IS DISTINCT FROM ingest_webhook.payload), e.order_key
            INTO v_changes, v_oldkey
            FROM webhooks.inbox AS e
            WHERE e.id = v_id;
            IF NOT coalesce(v_changes, false) THEN
                event_id := v_id;
                outcome  := 'duplicate';
                RETURN NEXT;
                RETURN;
            END IF;
        END IF;

        -- 2. A new key, or a pending event with another payload. An ordered
        --    event's place in its sequence is computed once, here
        --    (_order_ingest); a reconciled payload gets it again, and the
        --    trigger events_order_sync settles the sequences it left and
        --    joined. Both locks are taken here, within the same bounded wait
        --    (the old key's only when a reconciled payload moves the event to
        --    another sequence), and the trigger only checks that it holds
        --    them (pginbox.order_ingest): the delivery never waits longer.
        --    Whether the provider is ordered is read from
        --    _ordered_providers(), a constant: a provider without ordering
        --    reads no table for it.
        IF v_held IS NULL THEN
            v_held := false;
            IF ingest_webhook.provider = ANY (webhooks._ordered_providers()) THEN
                v_ordered := true;
                v_until := coalesce(nullif(pg_catalog.current_setting('pginbox.order_wait_until', true), '')::timestamptz,
                                    clock_timestamp() + interval '1 second');
                SELECT o.order_key, o.order_num, o.order_text, o.order_held, o.order_busy
                INTO v_okey, v_onum, v_otext, v_held, v_busy
                FROM webhooks._order_ingest(ingest_webhook.provider, ingest_webhook.external_id,
                                            ingest_webhook.payload, v_until) AS o;
            END IF;
        END IF;
        v_ordered := v_ordered OR coalesce(v_changes AND v_oldkey IS NOT NULL, false);
        IF v_busy THEN
            v_oldkey := v_okey; -- the key named below
        ELSIF v_changes AND v_oldkey IS NOT NULL AND v_oldkey IS DISTINCT FROM v_okey THEN
            v_busy := NOT webhooks._order_lock_within(ingest_webhook.provider, v_oldkey,
                                                      coalesce(v_until, clock_timestamp() + interval '1 second'));
        END IF;
        IF v_busy THEN
            IF pg_catalog.current_setting('pginbox.order_busy', true) = 'return' THEN
                outcome := 'busy';
                RETURN NEXT;
                RETURN;
            END IF;
            PERFORM webhooks._order_busy(ingest_webhook.provider, ingest_webhook.external_id, v_oldkey);
        END IF;

        IF v_id IS NULL THEN
            -- The key's one arbiter: its primary key.
            INSERT INTO webhooks.keys AS k (provider, external_id, event_id, received_at)
            VALUES (ingest_webhook.provider, ingest_webhook.external_id, nextval('webhooks.events_id_seq'), now())
            ON CONFLICT ON CONSTRAINT keys_pkey DO NOTHING
            RETURNING k.event_id INTO v_new;
            IF v_new IS NULL THEN
                -- 3. A concurrent delivery stored the key first. ON CONFLICT
                --    waited for it, so it is committed, and the next round's
                --    look sees it.
                CONTINUE;
            END IF;
            INSERT INTO webhooks.inbox (id, provider, external_id, event_type, payload, source,
                                        order_key, order_num, order_text, order_held, trace_parent)
            VALUES (v_new, ingest_webhook.provider, ingest_webhook.external_id, ingest_webhook.event_type,
                    ingest_webhook.payload, ingest_webhook.source, v_okey, v_onum, v_otext, v_held, v_trace);
            IF v_held THEN
                PERFORM webhooks._order_settle(ingest_webhook.provider, v_okey);
            END IF;
            IF ingest_webhook.notify THEN
                PERFORM pg_notify('webhooks_events', ingest_webhook.provider);
            END IF;
            event_id := v_new;
            outcome  := 'created';
            RETURN NEXT;
            RETURN;
        END IF;

        IF v_ordered THEN
            PERFORM pg_catalog.set_config('pginbox.order_ingest', 'on', true);
        END IF;
        UPDATE webhooks.inbox AS e
        SET payload    = ingest_webhook.payload,
            event_type = ingest_webhook.event_type,
            revision   = e.revision + 1,
            updated_at = now(),
            order_key  = v_okey,
            order_num  = v_onum,
            order_text = v_otext,
            order_held = v_okey IS NOT NULL AND (e.order_held OR e.order_key IS DISTINCT FROM v_okey)
        WHERE e.id = v_id
          AND e.status = 'pending'
          AND e.body_sha256 IS NULL
          AND e.payload IS DISTINCT FROM ingest_webhook.payload
        RETURNING e.revision INTO v_revision;
        IF v_ordered THEN
            PERFORM pg_catalog.set_config('pginbox.order_ingest', 'off', true);
        END IF;
        IF ingest_webhook.notify AND v_revision IS NOT NULL THEN
            PERFORM pg_notify('webhooks_events', ingest_webhook.provider);
        END IF;
        -- No row changed: a concurrent delivery or a worker got there first.
        event_id := v_id;
        outcome  := CASE WHEN v_revision IS NOT NULL THEN 'updated' ELSE 'duplicate' END;
        RETURN NEXT;
        RETURN;
    END LOOP;

    RAISE EXCEPTION 'pginbox: could not ingest %/%: the row vanished three times while deduplicating',
        ingest_webhook.provider, ingest_webhook.external_id
        USING ERRCODE = 'serialization_failure';
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.ingest_webhook(text, text, text, jsonb, text, boolean, bytea, text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.ingest_webhook(text, text, text, jsonb, text, boolean, bytea, text) IS
  'Stores one webhook delivery exactly once per (provider, external_id) with a single INSERT ... ON CONFLICT '
  '(a key already stored and unchanged is answered by a look-up first, read-only). Returns one row '
  '(event_id, outcome): created (first delivery), updated (redelivery of a pending event with a different '
  'payload: payload reconciled) or duplicate (nothing written). body_sha256 (default NULL): for keys from an '
  'unsigned header (github, shopify, sume by X-Sume-Event-Id) pass sha256(raw body); then a body already stored '
  'for the provider under another key is a duplicate of that event, and a known key is always a duplicate, never '
  'updated (a different body also raises NOTICE ''pginbox: different body under a stored key''). Never raises on a '
  'duplicate; raises on a NULL/blank provider, external_id, event_type or source, an external_id over 255 bytes, '
  'a payload that is not a JSON object or a body_sha256 that is not 32 bytes, and with SQLSTATE 55P03 (nothing '
  'stored: retry) on a delivery of an ordered provider whose sequence stays locked by another transaction for '
  'one second. notify => true sends NOTIFY '
  'webhooks_events on created/updated (off by default: NOTIFY serialises commits server-wide). Under '
  'REPEATABLE READ/SERIALIZABLE a concurrent duplicate can raise SQLSTATE 40001: retry. trace_parent (default '
  'NULL): the W3C traceparent of the caller''s span, stored with a new event (malformed: stored as NULL) so its '
  'handler runs join that trace.';
