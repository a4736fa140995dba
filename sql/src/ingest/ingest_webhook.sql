-- +goose StatementBegin
-- webhooks.ingest_webhook stores one delivery exactly once. The unique key
-- (provider, external_id) and a single INSERT ... ON CONFLICT decide, never a
-- read, so any number of concurrent deliveries of the same id yield one row
-- and exactly one 'created'. A redelivery of an event that is still pending
-- and carries a different payload reconciles the payload ('updated');
-- anything else ('duplicate') writes nothing (normally not even a row lock).
--
-- ON CONFLICT ... DO UPDATE ... WHERE <false> returns no row, so a duplicate is
-- told apart by the missing RETURNING row, and created from updated by the
-- revision counter the update bumps: no reliance on xmax.
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
-- Both unique indexes (key, and provider + digest) decide in one INSERT ...
-- ON CONFLICT DO NOTHING with no conflict target; a follow-up look-up by key,
-- then by digest, names the event that was there first. A row once stored
-- with a digest is never 'updated' by any later call, digest or not.
--
-- trace_parent (NULL by default) is the W3C traceparent of the caller's span
-- for this delivery (the runner's server span, when tracing is on). It is
-- stored with a new event only (a redelivery or duplicate keeps the first
-- one), and a value that is not a well-formed traceparent is stored as NULL,
-- never refused: tracing never costs a delivery.
--
-- An ordered provider's delivery never waits on its sequence: when another
-- transaction holds the sequence's lock, the event is stored held and the
-- sequence settled later (_order_ingest, _order_settle_deferred), so one
-- blocked sequence holds up neither the other deliveries nor this one. A
-- key or order value too large to index leaves the event unordered
-- (counted in webhooks.order_skipped), never fails the delivery.
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
    v_deferred boolean := false;
    v_ordered  boolean := false;
    v_trace    text;
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
        -- concurrent prune deletes the row between two statements.
        FOR v_try IN 1..3 LOOP
            -- 1. Look, without locking: a known key, then a known body, is a
            --    duplicate, read-only. Neither look decides that the delivery
            --    is new: only the unique indexes do, in step 2.
            SELECT e.id,
                   CASE WHEN e.body_sha256 IS NOT NULL THEN e.body_sha256 <> ingest_webhook.body_sha256
                        ELSE e.payload IS NOT NULL AND e.payload <> ingest_webhook.payload END
            INTO v_id, v_changes
            FROM webhooks.events AS e
            WHERE e.provider = ingest_webhook.provider AND e.external_id = ingest_webhook.external_id;
            IF v_id IS NULL THEN
                SELECT e.id, false INTO v_id, v_changes
                FROM webhooks.events AS e
                WHERE e.provider = ingest_webhook.provider AND e.body_sha256 = ingest_webhook.body_sha256;
            END IF;

            -- 2. Neither is known: one insert, which any unique violation
            --    (the key or the body) turns into nothing.
            IF v_id IS NULL THEN
                IF v_held IS NULL THEN
                    v_held := false;
                    IF ingest_webhook.provider = ANY (webhooks._ordered_providers()) THEN
                        SELECT o.order_key, o.order_num, o.order_text, o.order_held, o.order_deferred
                        INTO v_okey, v_onum, v_otext, v_held, v_deferred
                        FROM webhooks._order_ingest(ingest_webhook.provider, ingest_webhook.external_id,
                                                    ingest_webhook.payload) AS o;
                    END IF;
                END IF;
                INSERT INTO webhooks.events AS e (provider, external_id, event_type, payload, source, body_sha256,
                                                  order_key, order_num, order_text, order_held, trace_parent)
                VALUES (ingest_webhook.provider, ingest_webhook.external_id, ingest_webhook.event_type,
                        ingest_webhook.payload, ingest_webhook.source, ingest_webhook.body_sha256,
                        v_okey, v_onum, v_otext, v_held, v_trace)
                ON CONFLICT DO NOTHING
                RETURNING e.id INTO v_id;

                IF v_id IS NOT NULL THEN
                    IF v_held AND NOT v_deferred THEN
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
                --    visible to these statements' fresh snapshots.
                SELECT e.id,
                       CASE WHEN e.body_sha256 IS NOT NULL THEN e.body_sha256 <> ingest_webhook.body_sha256
                            ELSE e.payload IS NOT NULL AND e.payload <> ingest_webhook.payload END
                INTO v_id, v_changes
                FROM webhooks.events AS e
                WHERE e.provider = ingest_webhook.provider AND e.external_id = ingest_webhook.external_id;
                IF v_id IS NULL THEN
                    SELECT e.id, false INTO v_id, v_changes
                    FROM webhooks.events AS e
                    WHERE e.provider = ingest_webhook.provider AND e.body_sha256 = ingest_webhook.body_sha256;
                END IF;
            END IF;

            IF v_id IS NOT NULL THEN
                IF v_changes THEN
                    RAISE NOTICE 'pginbox: different body under a stored key'
                        USING DETAIL = format('provider %s, external_id %s, event_id %s: the key is not signed, '
                                              'so the stored payload was kept', ingest_webhook.provider,
                                              ingest_webhook.external_id, v_id);
                END IF;
                event_id := v_id;
                outcome  := 'duplicate';
                RETURN NEXT;
                RETURN;
            END IF;
        END LOOP;

        RAISE EXCEPTION 'pginbox: could not ingest %/%: the row vanished three times while deduplicating',
            ingest_webhook.provider, ingest_webhook.external_id
            USING ERRCODE = 'serialization_failure';
    END IF;

    -- A key from the signed body (no digest): as before.
    FOR v_try IN 1..3 LOOP
        -- 1. Look, without locking. A known key whose row would not change
        --    (no longer pending, stored under an unsigned key, or the same
        --    payload) is a duplicate and ends here: a read-only transaction
        --    (no xid, no WAL, no flush at commit) that never waits on another
        --    delivery's row lock. The look never decides that a key is new:
        --    only the unique key does, in step 2.
        SELECT e.id, (e.status = 'pending' AND e.body_sha256 IS NULL
                      AND e.payload IS DISTINCT FROM ingest_webhook.payload)
        INTO v_id, v_changes
        FROM webhooks.events AS e
        WHERE e.provider = ingest_webhook.provider AND e.external_id = ingest_webhook.external_id;

        IF v_id IS NOT NULL AND NOT v_changes THEN
            event_id := v_id;
            outcome  := 'duplicate';
            RETURN NEXT;
            RETURN;
        END IF;

        -- 2. A new key, or a pending event with another payload: the one
        --    atomic upsert decides, exactly as before the look existed. An
        --    ordered event's place in its sequence is computed once, here
        --    (_order_ingest); a reconciled payload gets it again, and the
        --    trigger events_order_sync settles the sequences it left and
        --    joined, or lists them for a later settle when another
        --    transaction holds one (pginbox.order_defer: _order_defer), so
        --    the delivery never waits on a sequence lock. An event stored
        --    while its sequence's lock was held elsewhere (v_deferred) is
        --    held, and so is a reconciled one whose order value changed
        --    then: the deferred settle decides. Whether the provider is
        --    ordered is read from _ordered_providers(), a constant: a
        --    provider without ordering reads no table for it, and the
        --    transaction locks no more relations than the INSERT needs.
        IF v_held IS NULL THEN
            v_held := false;
            IF ingest_webhook.provider = ANY (webhooks._ordered_providers()) THEN
                v_ordered := true;
                SELECT o.order_key, o.order_num, o.order_text, o.order_held, o.order_deferred
                INTO v_okey, v_onum, v_otext, v_held, v_deferred
                FROM webhooks._order_ingest(ingest_webhook.provider, ingest_webhook.external_id,
                                            ingest_webhook.payload) AS o;
            END IF;
        END IF;
        IF v_ordered THEN
            PERFORM pg_catalog.set_config('pginbox.order_defer', 'on', true);
        END IF;
        INSERT INTO webhooks.events AS e (provider, external_id, event_type, payload, source,
                                          order_key, order_num, order_text, order_held, trace_parent)
        VALUES (ingest_webhook.provider, ingest_webhook.external_id, ingest_webhook.event_type, ingest_webhook.payload, ingest_webhook.source,
                v_okey, v_onum, v_otext, v_held, v_trace)
        ON CONFLICT ON CONSTRAINT events_provider_external_id_key DO UPDATE
            SET payload    = excluded.payload,
                event_type = excluded.event_type,
                revision   = e.revision + 1,
                updated_at = now(),
                order_key  = excluded.order_key,
                order_num  = excluded.order_num,
                order_text = excluded.order_text,
                order_held = excluded.order_key IS NOT NULL
                             AND (e.order_held OR e.order_key IS DISTINCT FROM excluded.order_key
                                  OR (v_deferred AND (e.order_num IS DISTINCT FROM excluded.order_num
                                                      OR e.order_text IS DISTINCT FROM excluded.order_text)))
            WHERE e.status = 'pending'
              AND e.body_sha256 IS NULL
              AND e.payload IS DISTINCT FROM excluded.payload
        RETURNING e.id, e.revision INTO v_id, v_revision;
        IF v_ordered THEN
            PERFORM pg_catalog.set_config('pginbox.order_defer', 'off', true);
        END IF;

        IF v_id IS NOT NULL THEN
            IF v_revision = 1 AND v_held AND NOT v_deferred THEN
                PERFORM webhooks._order_settle(ingest_webhook.provider, v_okey);
            END IF;
            IF ingest_webhook.notify THEN
                PERFORM pg_notify('webhooks_events', ingest_webhook.provider);
            END IF;
            event_id := v_id;
            outcome  := CASE WHEN v_revision = 1 THEN 'created' ELSE 'updated' END;
            RETURN NEXT;
            RETURN;
        END IF;

        -- 3. The upsert wrote nothing: a concurrent delivery got there first
        --    (between the look and the upsert) and the row is not a pending
        --    event with a different payload. ON CONFLICT locked the row, so
        --    it is committed and visible to this statement's fresh snapshot.
        SELECT e.id INTO v_id
        FROM webhooks.events AS e
        WHERE e.provider = ingest_webhook.provider AND e.external_id = ingest_webhook.external_id;

        IF v_id IS NOT NULL THEN
            event_id := v_id;
            outcome  := 'duplicate';
            RETURN NEXT;
            RETURN;
        END IF;
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
  'a payload that is not a JSON object or a body_sha256 that is not 32 bytes. notify => true sends NOTIFY '
  'webhooks_events on created/updated (off by default: NOTIFY serialises commits server-wide). Under '
  'REPEATABLE READ/SERIALIZABLE a concurrent duplicate can raise SQLSTATE 40001: retry. trace_parent (default '
  'NULL): the W3C traceparent of the caller''s span, stored with a new event (malformed: stored as NULL) so its '
  'handler runs join that trace.';
