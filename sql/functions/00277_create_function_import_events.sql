-- +goose Up
-- begin sql/src/store/import_events.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.import_events stores history brought from another inbox (or a
-- webhook_seen table) as processed events of provider, each under its own
-- received_at, so that their keys answer 'duplicate' from now on as if
-- pginbox had received them.
--
-- events is a JSON array of at most 10,000 objects (54000 beyond: split the
-- file; pginbox import does), each with these keys and no other:
--   external_id  the provider's id, a non-blank string of at most 255 bytes
--   event_type   a non-blank string of at most 255 bytes
--   received_at  an RFC 3339 timestamp with its offset ("2024-05-01T12:00:00Z",
--                "2024-05-01 14:00:00.5+02:00"), from 2000-01-01 UTC to five
--                minutes from now: a time without an offset would be read in
--                the session's time zone, so it is refused rather than
--                guessed
--   payload      a JSON object, or null or absent (stored as pruned)
-- Every element is checked before anything is written; the first bad one
-- raises 22023 with its index, counted from 0, as "pginbox: events[N]
-- (0-based): why", and nothing of the call is stored.
--
-- Keys are decided by webhooks.keys alone, like ingest's: an element whose
-- key is stored (by a delivery, an earlier import, or a concurrent ingest
-- that commits first: INSERT ... ON CONFLICT DO NOTHING waits for it) is a
-- duplicate, and so is a key repeated in the array after its first
-- occurrence (the first wins). New keys are written in key order, as
-- ingest_batch writes its own, so concurrent imports and batches sharing keys
-- wait for each other instead of deadlocking. Until an upgrade has copied
-- the queue's old keys into webhooks.keys, a key still only in the queue is a
-- duplicate too.
--
-- Each new key's event goes into the day slice of webhooks.history of its
-- received_at (UTC), created when missing; status processed, processed_at =
-- received_at, attempts 0, source 'import'; a null payload is stored as
-- pruned (payload_pruned_at = now()). An event of a day prune() already
-- dropped (webhooks.history_days.state = 'dropped') stores its key only: its
-- history is past keep_payload. An event older than keep_payload on a day
-- never dropped gets its slice, which the next prune() drops again; a key
-- older than keep_keys is deleted by the next prune(). webhooks.history is
-- held in ROW EXCLUSIVE mode before any day is looked at, so a prune()
-- running meanwhile cannot drop a slice between the look and the insert.
-- Returns {"imported": n, "duplicates": m}, n + m = the array's length.
CREATE OR REPLACE FUNCTION webhooks.import_events(provider text, events jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    c_max_events CONSTANT integer := 10000;
    c_rfc3339    CONSTANT text := '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]'
                                  '([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?'
                                  '([Zz]|[+-](0[0-9]|1[0-5]):[0-5][0-9])$';
    v_count      integer;
    v_bad        integer;
    v_problem    text;
    v_legacy     boolean;
    v_ids        bigint[];
    v_xs         text[];
    v_types      text[];
    v_times      timestamptz[];
    v_payloads   jsonb[];
    v_days       date[];
    v_live       date[] := '{}';
    v_day        date;
BEGIN
    PERFORM webhooks._require_text('provider', import_events.provider, 64);
    IF import_events.events IS NULL THEN
        RAISE EXCEPTION 'pginbox: events must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.jsonb_typeof(import_events.events) <> 'array' THEN
        RAISE EXCEPTION 'pginbox: events must be a JSON array, got a JSON %', pg_catalog.jsonb_typeof(import_events.events)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_count := pg_catalog.jsonb_array_length(import_events.events);
    IF v_count > c_max_events THEN
        RAISE EXCEPTION 'pginbox: % events in one import; the limit is %', v_count, c_max_events
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Import them in calls of at most 10000 events.';
    END IF;
    IF v_count = 0 THEN
        RETURN pg_catalog.jsonb_build_object('imported', 0, 'duplicates', 0);
    END IF;

    -- 1. Every element, before anything is written: the first bad one.
    --    received_at is cast only once its text is an RFC 3339 timestamp of
    --    a real day, so the cast itself never raises.
    WITH elem AS (
        SELECT (a.ord - 1)::integer AS idx, a.e,
               pg_catalog.jsonb_typeof(a.e) AS kind,
               pg_catalog.jsonb_typeof(a.e -> 'external_id') AS x_kind, a.e ->> 'external_id' AS x,
               pg_catalog.jsonb_typeof(a.e -> 'event_type') AS t_kind, a.e ->> 'event_type' AS t,
               pg_catalog.jsonb_typeof(a.e -> 'received_at') AS r_kind, a.e ->> 'received_at' AS r,
               pg_catalog.jsonb_typeof(a.e -> 'payload') AS p_kind
        FROM pg_catalog.jsonb_array_elements(import_events.events) WITH ORDINALITY AS a(e, ord)
    ), shape AS (
        SELECT el.idx, el.r,
            CASE
            WHEN el.kind <> 'object' THEN
                pg_catalog.format('is a JSON %s, not an object', el.kind)
            WHEN el.e - ARRAY['external_id', 'event_type', 'received_at', 'payload'] <> '{}' THEN
                pg_catalog.format('has the unknown key %s; the keys are external_id, event_type, received_at and payload',
                    (SELECT pg_catalog.to_jsonb(pg_catalog.left(min(k), 64))::text
                     FROM pg_catalog.jsonb_object_keys(el.e - ARRAY['external_id', 'event_type', 'received_at', 'payload']) AS k))
            WHEN el.x_kind IS NULL OR el.x_kind = 'null' THEN 'external_id is missing'
            WHEN el.x_kind <> 'string' THEN pg_catalog.format('external_id must be a string, got a JSON %s', el.x_kind)
            WHEN pg_catalog.btrim(el.x, E' \t\r\n') = '' THEN 'external_id must not be blank'
            WHEN pg_catalog.octet_length(el.x) > 255 THEN
                pg_catalog.format('external_id is %s bytes long; the limit is 255 bytes', pg_catalog.octet_length(el.x))
            WHEN el.t_kind IS NULL OR el.t_kind = 'null' THEN 'event_type is missing'
            WHEN el.t_kind <> 'string' THEN pg_catalog.format('event_type must be a string, got a JSON %s', el.t_kind)
            WHEN pg_catalog.btrim(el.t, E' \t\r\n') = '' THEN 'event_type must not be blank'
            WHEN pg_catalog.octet_length(el.t) > 255 THEN
                pg_catalog.format('event_type is %s bytes long; the limit is 255 bytes', pg_catalog.octet_length(el.t))
            WHEN el.r_kind IS NULL OR el.r_kind = 'null' THEN 'received_at is missing'
            WHEN el.r_kind <> 'string' THEN pg_catalog.format('received_at must be a string, got a JSON %s', el.r_kind)
            WHEN el.r !~ c_rfc3339 THEN
                pg_catalog.format('received_at %s is not an RFC 3339 timestamp with an offset (2024-05-01T12:00:00Z)',
                    pg_catalog.to_jsonb(pg_catalog.left(el.r, 64))::text)
            WHEN pg_catalog.substr(el.r, 1, 4) < '1999' THEN
                pg_catalog.format('received_at %s is before 2000-01-01 UTC', pg_catalog.to_jsonb(el.r)::text)
            WHEN pg_catalog.substr(el.r, 9, 2)::integer > pg_catalog.date_part('day',
                     pg_catalog.make_date(pg_catalog.substr(el.r, 1, 4)::integer, pg_catalog.substr(el.r, 6, 2)::integer, 1)
                     + interval '1 month' - interval '1 day') THEN
                pg_catalog.format('received_at %s is not a day of its month', pg_catalog.to_jsonb(el.r)::text)
            WHEN el.p_kind IS NOT NULL AND el.p_kind NOT IN ('object', 'null') THEN
                pg_catalog.format('payload must be a JSON object or null, got a JSON %s', el.p_kind)
            END AS problem
        FROM elem AS el
    ), checked AS (
        SELECT s.idx,
            coalesce(s.problem,
                CASE
                WHEN s.r::timestamptz < timestamptz '2000-01-01 00:00:00+00' THEN
                    pg_catalog.format('received_at %s is before 2000-01-01 UTC', pg_catalog.to_jsonb(s.r)::text)
                WHEN s.r::timestamptz > now() + interval '5 minutes' THEN
                    pg_catalog.format('received_at %s is more than 5 minutes in the future', pg_catalog.to_jsonb(s.r)::text)
                END) AS problem
        FROM shape AS s
    )
    SELECT c.idx, c.problem INTO v_bad, v_problem
    FROM checked AS c
    WHERE c.problem IS NOT NULL
    ORDER BY c.idx
    LIMIT 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: events[%] (0-based): %; nothing was imported', v_bad, v_problem
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 2. No prune() may drop a slice from here to commit.
    LOCK TABLE webhooks.history IN ROW EXCLUSIVE MODE;
    v_legacy := pg_catalog.to_regclass('webhooks.events_provider_external_id_key') IS NOT NULL;

    -- 3. The keys: whatever the primary key of webhooks.keys lets in is new.
    WITH elem AS (
        SELECT DISTINCT ON (a.e ->> 'external_id')
               a.e ->> 'external_id' AS x, a.e ->> 'event_type' AS t,
               (a.e ->> 'received_at')::timestamptz AS r,
               CASE WHEN pg_catalog.jsonb_typeof(a.e -> 'payload') = 'object' THEN a.e -> 'payload' END AS p
        FROM pg_catalog.jsonb_array_elements(import_events.events) WITH ORDINALITY AS a(e, ord)
        ORDER BY a.e ->> 'external_id', a.ord
    ), fresh AS (
        SELECT el.x, el.r FROM elem AS el
        WHERE NOT (v_legacy AND EXISTS (SELECT FROM webhooks.inbox AS i
                                        WHERE i.provider = import_events.provider AND i.external_id = el.x))
    ), keyed AS (
        INSERT INTO webhooks.keys AS k (provider, external_id, event_id, received_at, body_sha256)
        SELECT import_events.provider, f.x, nextval('webhooks.events_id_seq'), f.r, NULL
        FROM fresh AS f
        ORDER BY f.x
        ON CONFLICT DO NOTHING
        RETURNING k.external_id, k.event_id
    )
    SELECT pg_catalog.array_agg(k.event_id), pg_catalog.array_agg(el.x), pg_catalog.array_agg(el.t),
           pg_catalog.array_agg(el.r), pg_catalog.array_agg(el.p)
    INTO v_ids, v_xs, v_types, v_times, v_payloads
    FROM keyed AS k
    JOIN elem AS el ON el.x = k.external_id;
    v_count := coalesce(pg_catalog.cardinality(v_ids), 0);

    -- 4. Their days: a slice for each, but none again for a day prune()
    --    dropped (key only).
    SELECT pg_catalog.array_agg(DISTINCT (r.r AT TIME ZONE 'UTC')::date) INTO v_days
    FROM pg_catalog.unnest(v_times) AS r(r);
    FOREACH v_day IN ARRAY coalesce(v_days, '{}') LOOP
        IF EXISTS (SELECT FROM webhooks.history_days AS d WHERE d.day = v_day AND d.state = 'dropped') THEN
            CONTINUE;
        END IF;
        PERFORM webhooks._history_slice(v_day);
        v_live := v_live || v_day;
    END LOOP;

    -- 5. The events, processed, in their days.
    INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, source, received_at,
                                  updated_at, processed_at, attempts, run_after, payload_pruned_at)
    SELECT i.id, import_events.provider, i.x, i.t, 'processed', i.p, 'import',
           i.r, now(), i.r, 0, i.r,
           CASE WHEN i.p IS NULL THEN now() END
    FROM unnest(v_ids, v_xs, v_types, v_times, v_payloads) AS i(id, x, t, r, p)
    WHERE (i.r AT TIME ZONE 'UTC')::date = ANY (v_live)
    ORDER BY i.r, i.id;

    RETURN pg_catalog.jsonb_build_object('imported', v_count,
                                         'duplicates', pg_catalog.jsonb_array_length(import_events.events) - v_count);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.import_events(text, jsonb) IS
  'Imports history from another inbox as processed events of provider: events is a JSON array of at most 10000 '
  'objects {"external_id", "event_type", "received_at" (RFC 3339 with an offset, 2000-01-01 to now + 5 min), '
  '"payload" (object, null or absent: stored as pruned)}. Each new key goes into webhooks.keys and its event into '
  'the day slice of its own received_at (created when missing; key only for a day prune() dropped), status '
  'processed, source import. Keys already stored and repeats within the array (the first wins) are duplicates. '
  'The first bad element raises 22023 "pginbox: events[N] (0-based): ..." and nothing is imported; more than '
  '10000 raise 54000. Returns {"imported": n, "duplicates": m}. Owner only, like prune().';
REVOKE EXECUTE ON FUNCTION webhooks.import_events(text, jsonb) FROM PUBLIC;
-- end sql/src/store/import_events.sql
