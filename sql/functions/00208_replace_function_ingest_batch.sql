-- +goose Up
-- begin sql/src/ingest/ingest_batch.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.ingest_batch stores many deliveries in one call (and so, in the
-- caller's one transaction: one commit, one WAL flush for all of them), each
-- with exactly the outcome webhooks.ingest_webhook would give it if the
-- deliveries were stored one after the other in ordinal order.
--
-- Input is parallel arrays, one element per delivery; sources,
-- body_sha256s and trace_parents may be NULL (every source 'webhook', no
-- digest, no trace context; a malformed traceparent is stored as NULL). Output is one
-- row per input element, in ordinal order (1-based): event_id and outcome
-- (created, updated, duplicate) as ingest_webhook's, or outcome 'refused'
-- with event_id NULL and error saying what is wrong with that element (a
-- NULL/blank/too long provider, external_id, event_type or source, a payload
-- that is not a JSON object, a digest that is not 32 bytes). A refused
-- element never fails its neighbours. An element of an ordered provider
-- whose sequence stays locked by another transaction (set_ordering() on a
-- backlog, a complete(), fail() or replay() of one of its events not
-- committed yet) has outcome 'retry', event_id NULL and error saying so:
-- nothing of it is stored, and the sender should retry it. The call waits
-- 250 ms at most in all for such locks, however many of its elements are
-- blocked, so a blocked sequence delays its neighbours by no more.
--
-- The common case, keys not stored yet, is one set-based INSERT ... ON
-- CONFLICT DO NOTHING over the first element of each key (of providers
-- without ordering: an ordered provider's events go through
-- ingest_webhook, which places each in its sequence). Every element that
-- statement did not create (a stored key, a second copy, a body already
-- stored under another unsigned key) then goes through ingest_webhook itself,
-- which sees what the INSERT wrote: its rules for updated, duplicate and the
-- body digest apply unchanged.
--
-- Rows are written in key order, so concurrent batches sharing keys wait for
-- each other rather than deadlock; two concurrent batches holding one
-- unsigned body under different keys still can (SQLSTATE 40P01): run the call
-- in a transaction of its own and retry it on 40P01 or 40001.
CREATE OR REPLACE FUNCTION webhooks.ingest_batch(
    providers     text[],
    external_ids  text[],
    event_types   text[],
    payloads      jsonb[],
    sources       text[]  DEFAULT NULL,
    body_sha256s  bytea[] DEFAULT NULL,
    trace_parents text[]  DEFAULT NULL,
    notify        boolean DEFAULT false
)
RETURNS TABLE (ordinal integer, event_id bigint, outcome text, error text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n       integer := coalesce(cardinality(ingest_batch.providers), 0);
    v_ids     bigint[];
    v_out     text[];
    v_err     text[];
    v_rec     record;
    v_row     record;
    v_stored  boolean := false;
    v_ordered boolean := false;
    v_legacy  boolean;
BEGIN
    IF coalesce(cardinality(ingest_batch.external_ids), 0) <> v_n
       OR coalesce(cardinality(ingest_batch.event_types), 0) <> v_n
       OR coalesce(cardinality(ingest_batch.payloads), 0) <> v_n
       OR (ingest_batch.sources IS NOT NULL AND cardinality(ingest_batch.sources) <> v_n)
       OR (ingest_batch.body_sha256s IS NOT NULL AND cardinality(ingest_batch.body_sha256s) <> v_n)
       OR (ingest_batch.trace_parents IS NOT NULL AND cardinality(ingest_batch.trace_parents) <> v_n) THEN
        RAISE EXCEPTION 'pginbox: ingest_batch needs arrays of one length: % providers, % external_ids, % event_types, % payloads, % sources, % body_sha256s, % trace_parents',
            v_n, coalesce(cardinality(ingest_batch.external_ids), 0), coalesce(cardinality(ingest_batch.event_types), 0),
            coalesce(cardinality(ingest_batch.payloads), 0), coalesce(cardinality(ingest_batch.sources)::text, 'NULL'),
            coalesce(cardinality(ingest_batch.body_sha256s)::text, 'NULL'), coalesce(cardinality(ingest_batch.trace_parents)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_legacy := pg_catalog.to_regclass('webhooks.events_provider_external_id_key') IS NOT NULL;
    v_ids := array_fill(NULL::bigint, ARRAY[v_n]);
    v_out := array_fill(NULL::text, ARRAY[v_n]);
    v_err := array_fill(NULL::text, ARRAY[v_n]);

    -- 1. Refuse what ingest_webhook would raise on, element by element.
    FOR v_rec IN
        SELECT u.ord::integer AS ord,
               webhooks._ingest_batch_problem(u.p, u.x, u.t, u.pl, coalesce(u.s, 'webhook'), u.d) AS problem
        FROM unnest(ingest_batch.providers, ingest_batch.external_ids, ingest_batch.event_types,
                    ingest_batch.payloads,
                    coalesce(ingest_batch.sources, array_fill(NULL::text, ARRAY[v_n])),
                    coalesce(ingest_batch.body_sha256s, array_fill(NULL::bytea, ARRAY[v_n])),
                    coalesce(ingest_batch.trace_parents, array_fill(NULL::text, ARRAY[v_n])))
             WITH ORDINALITY AS u(p, x, t, pl, s, d, tp, ord)
    LOOP
        IF v_rec.problem IS NOT NULL THEN
            v_out[v_rec.ord] := 'refused';
            v_err[v_rec.ord] := v_rec.problem;
        END IF;
    END LOOP;

    -- 2. One INSERT into webhooks.keys for the first element of each key
    --    (and of each body digest) among the valid ones, chained into one
    --    INSERT into the queue for the keys it stored: new keys are created
    --    here. No two
    --    rows of the INSERT conflict with each other, so its order is free:
    --    by key, the order every batch takes, so that two batches sharing
    --    keys wait for each other instead of deadlocking. A conflict with a
    --    stored row (or a concurrent batch's) creates nothing.
    FOR v_rec IN
        WITH input AS (
            SELECT u.ord::integer AS ord, u.p, u.x, u.t, u.pl, coalesce(u.s, 'webhook') AS s, u.d,
                   CASE WHEN u.tp ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN u.tp END AS tp,
                   row_number() OVER (PARTITION BY u.p, u.x ORDER BY u.ord) AS nth_key,
                   row_number() OVER (PARTITION BY u.p, u.d ORDER BY u.ord) AS nth_body
            FROM unnest(ingest_batch.providers, ingest_batch.external_ids, ingest_batch.event_types,
                        ingest_batch.payloads,
                        coalesce(ingest_batch.sources, array_fill(NULL::text, ARRAY[v_n])),
                        coalesce(ingest_batch.body_sha256s, array_fill(NULL::bytea, ARRAY[v_n])),
                        coalesce(ingest_batch.trace_parents, array_fill(NULL::text, ARRAY[v_n])))
                 WITH ORDINALITY AS u(p, x, t, pl, s, d, tp, ord)
            WHERE v_out[u.ord] IS NULL
              -- A provider with ordering goes through ingest_webhook, which
              -- places each event in its sequence (step 3).
              AND (u.p = ANY (webhooks._ordered_providers())) IS NOT TRUE
              -- While keys of events stored before storage v2 are still
              -- being copied into webhooks.keys, every element goes through
              -- ingest_webhook, which also looks in the queue's old unique key.
              AND NOT v_legacy
        ), firsts AS (
            SELECT i.* FROM input AS i WHERE i.nth_key = 1 AND (i.d IS NULL OR i.nth_body = 1)
        ), keyed AS (
            INSERT INTO webhooks.keys AS k (provider, external_id, event_id, received_at, body_sha256)
            SELECT f.p, f.x, nextval('webhooks.events_id_seq'), now(), f.d FROM firsts AS f ORDER BY f.p, f.x
            ON CONFLICT DO NOTHING
            RETURNING k.event_id, k.provider, k.external_id
        ), created AS (
            INSERT INTO webhooks.inbox AS e (id, provider, external_id, event_type, payload, source, body_sha256, trace_parent)
            SELECT k.event_id, f.p, f.x, f.t, f.pl, f.s, f.d, f.tp
            FROM keyed AS k
            JOIN firsts AS f ON f.p = k.provider AND f.x = k.external_id
            RETURNING e.id, e.provider, e.external_id
        )
        SELECT f.ord, c.id
        FROM created AS c
        JOIN firsts AS f ON f.p = c.provider AND f.x = c.external_id
    LOOP
        v_ids[v_rec.ord] := v_rec.id;
        v_out[v_rec.ord] := 'created';
        v_stored := true;
    END LOOP;

    -- 3. The rest, one by one by ingest_webhook's own rules: in ordinal order
    --    within a key (which is all that decides their outcomes), by key
    --    across keys (the lock order of step 2). The sequence locks of
    --    ordered providers are waited for until one deadline for the whole
    --    call (pginbox.order_wait_until), and an element whose lock stays
    --    held comes back 'busy' (pginbox.order_busy) instead of raising.
    --    Keys of an ordered provider go in the order of their sequences
    --    (the sequence of a key's first copy): two batches sharing
    --    sequences take their locks in one order and wait for each other
    --    briefly, where crossing orders would hold each other until the
    --    deadline and refuse both.
    IF ingest_batch.providers && webhooks._ordered_providers() THEN
        PERFORM pg_catalog.set_config('pginbox.order_busy', 'return', true),
                pg_catalog.set_config('pginbox.order_wait_until', (clock_timestamp() + interval '250 milliseconds')::text, true);
        v_ordered := true;
    END IF;
    FOR v_rec IN
        SELECT u.ord::integer AS ord, u.p, u.x, u.t, u.pl, coalesce(u.s, 'webhook') AS s, u.d, u.tp
        FROM unnest(ingest_batch.providers, ingest_batch.external_ids, ingest_batch.event_types,
                    ingest_batch.payloads,
                    coalesce(ingest_batch.sources, array_fill(NULL::text, ARRAY[v_n])),
                    coalesce(ingest_batch.body_sha256s, array_fill(NULL::bytea, ARRAY[v_n])),
                    coalesce(ingest_batch.trace_parents, array_fill(NULL::text, ARRAY[v_n])))
             WITH ORDINALITY AS u(p, x, t, pl, s, d, tp, ord)
        LEFT JOIN LATERAL (
            SELECT v.order_key
            FROM webhooks._order_values(u.p, u.pl) AS v
            WHERE v_ordered AND u.p = ANY (webhooks._ordered_providers())
        ) AS k ON true
        WHERE v_out[u.ord] IS NULL
        ORDER BY u.p, first_value(k.order_key) OVER (PARTITION BY u.p, u.x ORDER BY u.ord), u.x, u.ord
    LOOP
        SELECT w.event_id, w.outcome INTO v_row
        FROM webhooks.ingest_webhook(v_rec.p, v_rec.x, v_rec.t, v_rec.pl, v_rec.s,
                                     notify => false, body_sha256 => v_rec.d, trace_parent => v_rec.tp) AS w;
        v_ids[v_rec.ord] := v_row.event_id;
        IF v_row.outcome = 'busy' THEN
            v_out[v_rec.ord] := 'retry';
            v_err[v_rec.ord] := format('pginbox: %s/%s was not stored: its sequence is locked by another transaction; retry it',
                                       v_rec.p, v_rec.x);
            CONTINUE;
        END IF;
        v_out[v_rec.ord] := v_row.outcome;
        v_stored := v_stored OR v_row.outcome <> 'duplicate';
    END LOOP;
    IF v_ordered THEN
        PERFORM pg_catalog.set_config('pginbox.order_busy', '', true),
                pg_catalog.set_config('pginbox.order_wait_until', '', true);
    END IF;

    IF v_stored AND ingest_batch.notify THEN
        PERFORM pg_notify('webhooks_events', ingest_batch.providers[1]);
    END IF;

    RETURN QUERY
        SELECT g.i, v_ids[g.i], v_out[g.i], v_err[g.i]
        FROM generate_series(1, v_n) AS g(i)
        ORDER BY g.i;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.ingest_batch(text[], text[], text[], jsonb[], text[], bytea[], text[], boolean) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.ingest_batch(text[], text[], text[], jsonb[], text[], bytea[], text[], boolean) IS
  'Stores many deliveries in one call (one transaction, one commit): parallel arrays providers, external_ids, '
  'event_types, payloads (and optionally sources, body_sha256s, trace_parents), one element per delivery. Returns one row per '
  'element in ordinal order (ordinal, event_id, outcome, error): each outcome is what ingest_webhook would give '
  'if the elements were stored one after another in ordinal order (two copies of one key: the first is created, '
  'the second updated or duplicate), or refused (event_id NULL, error says why) for an element ingest_webhook '
  'would raise on; a refused element never fails the others. An element of an ordered provider whose sequence '
  'stays locked by another transaction for the call''s 250 ms of waiting in all is retry (event_id NULL, nothing '
  'stored: retry it). New keys are written by one set-based INSERT ... ON '
  'CONFLICT DO NOTHING, in key order. Raises only when the arrays differ in length; run it in a transaction of '
  'its own and retry on SQLSTATE 40P01 or 40001 (two concurrent batches holding one unsigned body under '
  'different keys can deadlock). notify => true sends one NOTIFY webhooks_events when anything was created or updated.';
-- end sql/src/ingest/ingest_batch.sql
