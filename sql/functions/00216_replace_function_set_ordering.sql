-- +goose Up
-- begin sql/src/order/set_ordering.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.set_ordering turns on strict order per key for a provider (or
-- changes its settings). Both paths are checked before anything is written:
-- one that does not parse as an SQL/JSON path raises 22023 and changes
-- nothing. Calling it again with the same settings changes nothing.
--
-- New paths apply to events not yet claimed: the pending events of the
-- provider get their key and order value again from their payload, and
-- every sequence they are in is settled (_order_settle). Events in flight
-- (claimed, or locked by a row-lock worker right now) keep theirs, as do
-- processed and dead ones; nothing else of webhooks.events is read or
-- written, whatever its size. It takes one lock per sequence with pending
-- events, held until commit: with tens of thousands of such sequences, call
-- it while the backlog is small or raise max_locks_per_transaction.
--
-- A provider is the name events are stored under (the {provider} of
-- /webhooks/{provider}, the NAME of PGINBOX_PROVIDERS=NAME=KIND), never a
-- kind: with payments=stripe, set_ordering('stripe', ...) orders nothing.
-- So a name under which no event is stored and no signing secret is set
-- draws a WARNING that says so (the settings are stored all the same: a
-- provider may be set up before its first delivery).
--
-- An event ingested at the very instant of the call may still get the old
-- paths' values (ingest does not wait for set_ordering); it is then ordered
-- by those. A delivery of a sequence whose lock this call holds waits for
-- it a bounded time (_order_ingest), then is refused with 55P03 for its
-- sender to retry.
CREATE OR REPLACE FUNCTION webhooks.set_ordering(
    provider    text,
    key_path    text,
    order_path  text    DEFAULT NULL,
    dead_blocks boolean DEFAULT true
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_old     webhooks.ordering;
    v_keys    text[];
    v_skipped bigint;
BEGIN
    PERFORM webhooks._require_text('provider', set_ordering.provider, 64);
    IF set_ordering.key_path IS NULL OR btrim(set_ordering.key_path, E' \t\r\n') = ''
       OR octet_length(set_ordering.key_path) > 1000 THEN
        RAISE EXCEPTION 'pginbox: key_path must be an SQL/JSON path of at most 1000 bytes such as ''$.data.object.customer'', got %',
            coalesce(quote_literal(left(set_ordering.key_path, 100)), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    BEGIN
        PERFORM set_ordering.key_path::jsonpath;
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION 'pginbox: key_path % is not a valid SQL/JSON path: %', quote_literal(left(set_ordering.key_path, 100)), SQLERRM
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Write it like ''$.data.object.customer''.';
    END;
    IF set_ordering.order_path IS NOT NULL THEN
        IF btrim(set_ordering.order_path, E' \t\r\n') = '' OR octet_length(set_ordering.order_path) > 1000 THEN
            RAISE EXCEPTION 'pginbox: order_path must be NULL or an SQL/JSON path of at most 1000 bytes such as ''$.created'', got %',
                quote_literal(left(set_ordering.order_path, 100))
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        BEGIN
            PERFORM set_ordering.order_path::jsonpath;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'pginbox: order_path % is not a valid SQL/JSON path: %', quote_literal(left(set_ordering.order_path, 100)), SQLERRM
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Write it like ''$.created'', or pass NULL to order by arrival.';
        END;
    END IF;
    IF set_ordering.dead_blocks IS NULL THEN
        RAISE EXCEPTION 'pginbox: dead_blocks must be true or false, got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Is the name known? Its first event by the unique key
    -- (provider, external_id): an ORDER BY on the index's columns with LIMIT
    -- 1 is served by that index alone. A plain EXISTS lets the planner scan
    -- webhooks.events in physical order until it meets a row of the
    -- provider: for a provider with many events, all of them recent, it
    -- chose that and read every older row first (TestPlanSetOrderingProbe).
    IF NOT EXISTS (SELECT FROM webhooks.provider_secrets AS s WHERE s.provider = set_ordering.provider)
       AND NOT EXISTS (SELECT FROM (
               SELECT e.external_id
               FROM webhooks.keys AS e
               WHERE e.provider = set_ordering.provider
               ORDER BY e.external_id
               LIMIT 1) AS first_event) THEN
        RAISE WARNING 'pginbox: set_ordering(%): no event is stored under the provider name % and no signing secret is set for it: its ordering applies to no event yet',
            quote_literal(set_ordering.provider), quote_literal(set_ordering.provider)
            USING DETAIL = 'set_ordering picks events by the provider name they are delivered to, the {provider} of '
                           '/webhooks/{provider} (the NAME of PGINBOX_PROVIDERS=NAME=KIND), not by their kind: with '
                           'PGINBOX_PROVIDERS=payments=stripe, Stripe''s events are those of ''payments''.',
                  HINT = format('If %s is a kind or a typo, undo it with webhooks.clear_ordering(%s) and pass the provider''s name.',
                                quote_literal(set_ordering.provider), quote_literal(set_ordering.provider));
    END IF;

    -- One call at a time (ingest only reads this table and does not wait).
    LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;
    SELECT o.* INTO v_old FROM webhooks.ordering AS o WHERE o.provider = set_ordering.provider;
    IF v_old.provider IS NOT NULL AND v_old.key_path = set_ordering.key_path
       AND v_old.order_path IS NOT DISTINCT FROM set_ordering.order_path
       AND v_old.dead_blocks = set_ordering.dead_blocks THEN
        RETURN;
    END IF;

    INSERT INTO webhooks.ordering AS o (provider, key_path, order_path, dead_blocks)
    VALUES (set_ordering.provider, set_ordering.key_path, set_ordering.order_path, set_ordering.dead_blocks)
    ON CONFLICT (provider) DO UPDATE
        SET key_path    = excluded.key_path,
            order_path  = excluded.order_path,
            dead_blocks = excluded.dead_blocks,
            updated_at  = now();

    -- The sequences touched, old and new, each locked before any event of
    -- it is written (the triggers' settles take the same locks first).
    v_keys := ARRAY(
        SELECT DISTINCT k FROM (
            SELECT e.order_key AS k
            FROM webhooks.inbox AS e
            WHERE e.provider = set_ordering.provider AND e.order_key IS NOT NULL AND e.status <> 'processed'
            UNION ALL
            SELECT v.order_key
            FROM webhooks.inbox AS e
            CROSS JOIN LATERAL webhooks._order_values_at(set_ordering.key_path, set_ordering.order_path, e.payload) AS v
            WHERE e.provider = set_ordering.provider AND e.status = 'pending'
        ) AS keys
        WHERE k IS NOT NULL
        ORDER BY k);
    PERFORM webhooks._order_lock(set_ordering.provider, k) FROM pg_catalog.unnest(v_keys) AS k;

    -- Pending events not locked by a worker right now get the new values,
    -- held until their sequence is settled below. The triggers stand aside
    -- for this statement (pginbox.order_bulk): the settles follow. Events
    -- whose key or order value is too large to index become unordered, and
    -- are counted in webhooks.order_skipped as at ingest.
    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'on', true);
    WITH v AS MATERIALIZED (
        SELECT p.id, p.external_id, n.order_key, n.order_num, n.order_text, n.skipped
        FROM webhooks.inbox AS p
        CROSS JOIN LATERAL webhooks._order_values_at(set_ordering.key_path, set_ordering.order_path, p.payload) AS n
        WHERE p.provider = set_ordering.provider
          AND p.status = 'pending'
        FOR UPDATE OF p SKIP LOCKED
    ), updated AS (
        UPDATE webhooks.inbox AS e
        SET order_key  = v.order_key,
            order_num  = v.order_num,
            order_text = v.order_text,
            order_held = v.order_key IS NOT NULL
        FROM v
        WHERE e.id = v.id
    )
    INSERT INTO webhooks.order_skipped AS s (provider, reason, events, last_external_id, last_detail)
    SELECT set_ordering.provider, split_part(v.skipped, ' of ', 1), count(*),
           (array_agg(v.external_id ORDER BY v.id DESC))[1], (array_agg(v.skipped ORDER BY v.id DESC))[1]
    FROM v
    WHERE v.skipped IS NOT NULL
    GROUP BY 2
    ON CONFLICT (provider, reason) DO UPDATE
    SET events           = s.events + excluded.events,
        last_at          = now(),
        last_external_id = excluded.last_external_id,
        last_detail      = excluded.last_detail;
    GET DIAGNOSTICS v_skipped = ROW_COUNT;
    IF v_skipped > 0 THEN
        RAISE LOG 'pginbox: set_ordering(%) left pending events unordered whose key or order value cannot be indexed: see webhooks.order_skipped',
            set_ordering.provider;
    END IF;
    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'off', true);

    PERFORM webhooks._order_settle(set_ordering.provider, k) FROM pg_catalog.unnest(v_keys) AS k;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.set_ordering(text, text, text, boolean) IS
  'Processes events of provider in strict order per key from now on: events whose payload has a value at key_path '
  '(an SQL/JSON path such as ''$.data.object.customer'') form one sequence per value, ordered by the value at '
  'order_path (numbers as numbers, then text byte by byte; e.g. ''$.created''), then received_at, then id. An event '
  'runs only once every earlier event of its sequence is processed; a dead one blocks its sequence while '
  'dead_blocks. Events without a usable key value (missing, null, object, array, over 255 bytes) are not ordered, '
  'nor are those whose order value cannot be indexed (text over 255 bytes, a number over 255 bytes stored; '
  'counted in webhooks.order_skipped). '
  'Applies to pending events too. Idempotent; raises 22023 on a path that does not parse, changing nothing. '
  'provider is the name events are stored under (/webhooks/{provider}), not a kind: a name with no stored event '
  'and no signing secret draws a WARNING (the settings are stored all the same).';
REVOKE EXECUTE ON FUNCTION webhooks.set_ordering(text, text, text, boolean) FROM PUBLIC;
-- end sql/src/order/set_ordering.sql
