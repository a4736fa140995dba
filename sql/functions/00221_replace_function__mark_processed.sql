-- +goose Up
-- begin sql/src/process/_mark_processed.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._mark_processed marks events the calling transaction locked with
-- _lock_pending() processed. Without ordering, it moves them out of the
-- queue into their day of history (webhooks.history) in one statement;
-- ordered events are marked processed in the queue, for the sequence
-- bookkeeping below, and moved later by move_history(). It returns how
-- many it marked; the caller compares that with what it locked and raises
-- on a difference, so a handler's writes never commit without their event
-- marked. Only rows whose lock the calling transaction holds are marked: a
-- row locked FOR UPDATE carries its locker's transaction id as xmax, so
-- xmax = the caller's own id says the caller took the lease; a role granted
-- this function cannot mark an event it never locked (and so never ran).
CREATE OR REPLACE FUNCTION webhooks._mark_processed(event_ids bigint[])
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n         integer;
    v_xid       xid := (pg_catalog.txid_current() % 4294967296)::text::xid;
    v_providers text[];
    v_keys      text[];
    v_today     date;
    v_lo        timestamptz;
    v_hi        timestamptz;
    v_rest      integer;
BEGIN
    -- No provider ordered (_ordered_providers() empty): the plain statement,
    -- nothing more. (Events left with an order_key by an earlier ordering
    -- still get the triggers' work.)
    IF pg_catalog.cardinality(webhooks._ordered_providers()) = 0 THEN
        -- Straight into history: one delete from the queue and one insert
        -- into the day's slice (two right-edge index entries), instead of an
        -- update that writes every index of the queue and a move later.
        -- Only into slices known to exist (today's and yesterday's: two
        -- catalog look-ups); an older event is marked in the queue and
        -- moved by move_history(), which creates what it needs.
        v_today := (now() AT TIME ZONE 'UTC')::date;
        IF pg_catalog.to_regclass('webhooks.history_' || pg_catalog.to_char(v_today, 'YYYYMMDD')) IS NOT NULL
           AND pg_catalog.to_regclass('webhooks.history_' || pg_catalog.to_char(v_today + 1, 'YYYYMMDD')) IS NOT NULL THEN
            v_lo := CASE WHEN pg_catalog.to_regclass('webhooks.history_' || pg_catalog.to_char(v_today - 1, 'YYYYMMDD')) IS NOT NULL
                         THEN v_today - 1 ELSE v_today END::timestamp AT TIME ZONE 'UTC';
            v_hi := (v_today + 2)::timestamp AT TIME ZONE 'UTC';
            WITH gone AS (
                DELETE FROM webhooks.inbox AS e
                WHERE e.id = ANY (_mark_processed.event_ids)
                  AND e.status IS NOT DISTINCT FROM 'pending'
                  AND e.attempts < e.max_attempts
                  AND e.xmax = v_xid
                  AND e.received_at >= v_lo AND e.received_at < v_hi
                RETURNING e.*
            ), moved AS (
                INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, source, received_at,
                                              revision, updated_at, claimed_at, processed_at, attempts, max_attempts,
                                              run_after, locked_by, locked_until, last_error, payload_pruned_at,
                                              body_sha256, order_key, order_num, order_text, order_held, out_of_order,
                                              trace_parent, trace_link)
                SELECT g.id, g.provider, g.external_id, g.event_type, 'processed', g.payload, g.source, g.received_at,
                       g.revision, now(), now(), now(), g.attempts + 1, g.max_attempts,
                       g.run_after, NULL, NULL, NULL, g.payload_pruned_at,
                       g.body_sha256, g.order_key, g.order_num, g.order_text, g.order_held, g.out_of_order,
                       g.trace_parent, g.trace_link
                FROM gone AS g
                RETURNING 1
            )
            SELECT count(*)::integer INTO v_n FROM moved;
            IF v_n = pg_catalog.cardinality(_mark_processed.event_ids) THEN
                RETURN v_n;
            END IF;
        END IF;
        UPDATE webhooks.inbox AS e
        SET status       = 'processed',
            processed_at = now(),
            claimed_at   = now(),
            attempts     = e.attempts + 1,
            last_error   = NULL,
            updated_at   = now()
        WHERE e.id = ANY (_mark_processed.event_ids)
          AND e.status IS NOT DISTINCT FROM 'pending'
          AND e.attempts < e.max_attempts
          AND e.xmax = v_xid;
        GET DIAGNOSTICS v_rest = ROW_COUNT;
        RETURN coalesce(v_n, 0) + v_rest;
    END IF;

    -- Ordered events: both triggers stand aside for this statement
    -- (pginbox.order_bulk = 'mark'). The UPDATE itself clears order_held and
    -- marks a late arrival out_of_order, and moves the high-water marks of
    -- its sequences (webhooks.order_marks), as _order_mark_late() would: the
    -- marks are read in the statement's own snapshot, so the events of a run
    -- it marks together do not count against each other, and each sequence
    -- gets one write however many of its events the batch holds (a run from
    -- _lock_sequences()), in (provider, key) order. The settle of the
    -- sequences (_order_sync) runs below, once for all of them
    -- (_order_settle_many).
    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'mark', true);
    WITH u AS (
        UPDATE webhooks.inbox AS e
        SET status       = 'processed',
            processed_at = now(),
            claimed_at   = now(),
            attempts     = e.attempts + 1,
            last_error   = NULL,
            updated_at   = now(),
            order_held   = false,
            out_of_order = e.out_of_order OR (e.order_key IS NOT NULL AND EXISTS (
                SELECT FROM webhooks.order_marks AS m
                WHERE m.provider = e.provider
                  AND m.order_key = e.order_key
                  AND CASE WHEN m.marked_at = now()
                           THEN m.prior_id IS NOT NULL
                                AND (coalesce(m.prior_num, 'NaN'::numeric), coalesce(m.prior_text, '') COLLATE "C", m.prior_received, m.prior_id)
                                  > (coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id)
                           ELSE (coalesce(m.order_num, 'NaN'::numeric), coalesce(m.order_text, '') COLLATE "C", m.received_at, m.event_id)
                                  > (coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id)
                      END))
        WHERE e.id = ANY (_mark_processed.event_ids)
          AND e.status IS NOT DISTINCT FROM 'pending'
          AND e.attempts < e.max_attempts
          AND e.xmax = v_xid
        RETURNING e.id, e.provider, e.order_key, e.order_num, e.order_text, e.received_at
    ), marks AS (
        INSERT INTO webhooks.order_marks AS m (provider, order_key, order_num, order_text, received_at, event_id, marked_at)
        SELECT DISTINCT ON (u.provider, u.order_key)
               u.provider, u.order_key, u.order_num, u.order_text, u.received_at, u.id, now()
        FROM u
        WHERE u.order_key IS NOT NULL
        ORDER BY u.provider, u.order_key, coalesce(u.order_num, 'NaN'::numeric) DESC, coalesce(u.order_text, '') COLLATE "C" DESC,
                 u.received_at DESC, u.id DESC
        ON CONFLICT (provider, order_key) DO UPDATE
        SET prior_num      = CASE WHEN m.marked_at = now() THEN m.prior_num ELSE m.order_num END,
            prior_text     = CASE WHEN m.marked_at = now() THEN m.prior_text ELSE m.order_text END,
            prior_received = CASE WHEN m.marked_at = now() THEN m.prior_received ELSE m.received_at END,
            prior_id       = CASE WHEN m.marked_at = now() THEN m.prior_id ELSE m.event_id END,
            order_num      = excluded.order_num,
            order_text     = excluded.order_text,
            received_at    = excluded.received_at,
            event_id       = excluded.event_id,
            marked_at      = excluded.marked_at
        WHERE (coalesce(excluded.order_num, 'NaN'::numeric), coalesce(excluded.order_text, '') COLLATE "C", excluded.received_at, excluded.event_id)
            > (coalesce(m.order_num, 'NaN'::numeric), coalesce(m.order_text, '') COLLATE "C", m.received_at, m.event_id)
    )
    -- One pair per ordered event; _order_settle_many() takes each
    -- sequence once, in lock order.
    SELECT count(*)::integer,
           pg_catalog.array_agg(u.provider) FILTER (WHERE u.order_key IS NOT NULL),
           pg_catalog.array_agg(u.order_key) FILTER (WHERE u.order_key IS NOT NULL)
    INTO v_n, v_providers, v_keys
    FROM u;
    PERFORM pg_catalog.set_config('pginbox.order_bulk', 'off', true);
    PERFORM webhooks._order_settle_many(v_providers, v_keys);
    RETURN v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._mark_processed(bigint[]) IS
  'Marks the pending events event_ids that the calling transaction locked with _lock_pending() (and no others) processed in '
  'one statement, counting the attempt; returns how many it marked. The caller raises when that differs '
  'from what it locked, so a handler''s writes never commit without their event.';
REVOKE EXECUTE ON FUNCTION webhooks._mark_processed(bigint[]) FROM PUBLIC;
-- end sql/src/process/_mark_processed.sql
