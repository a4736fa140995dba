-- +goose Up
-- begin sql/src/recover/_sequence_gaps.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._sequence_gaps does the work of find_sequence_gaps() without its
-- argument checks. The textbook anti-join (generate_series over the window,
-- NOT EXISTS per id) costs the width of the window however few ids are
-- missing. This derives the holes from the ids actually present instead:
--
--   1. read the received ids of the provider inside the window from the
--      partial index (provider, seq), already in order: no sort, constant
--      memory;
--   2. pair each with the next one (lead(), the last one with to_seq + 1), and
--      the window's start with the first one (min(), one index probe);
--   3. expand only the pairs more than one apart with generate_series, and
--      drop the tombstoned ids among them (an anti-join against the partial
--      index (provider, seq) of tombstones).
--
-- So the cost follows the rows present in the window plus the ids returned.
-- Sequence ids are canonical decimals, so each number is at most one event of
-- the provider. A plain SQL function with one SELECT (STABLE, not STRICT, no
-- SET): the planner inlines it, so
-- EXPLAIN SELECT * FROM webhooks._sequence_gaps(...) shows the real plan.
CREATE OR REPLACE FUNCTION webhooks._sequence_gaps(provider text, from_seq bigint, to_seq bigint)
RETURNS TABLE (external_id text)
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT g.id::text
    FROM (
        -- the hole at the start of the window, if any
        SELECT _sequence_gaps.from_seq - 1 AS seq,
               coalesce((SELECT min(k.seq)
                         FROM webhooks.keys AS k
                         WHERE k.provider = _sequence_gaps.provider
                           AND k.seq IS NOT NULL
                           AND k.seq BETWEEN _sequence_gaps.from_seq AND _sequence_gaps.to_seq),
                        _sequence_gaps.to_seq + 1) AS next_seq
        UNION ALL
        -- the hole after each received id, up to the end of the window
        SELECT k.seq, lead(k.seq, 1, _sequence_gaps.to_seq + 1) OVER (ORDER BY k.seq)
        FROM webhooks.keys AS k
        WHERE k.provider = _sequence_gaps.provider
          AND k.seq IS NOT NULL
          AND k.seq BETWEEN _sequence_gaps.from_seq AND _sequence_gaps.to_seq
    ) AS w
    CROSS JOIN LATERAL generate_series(w.seq + 1, w.next_seq - 1) AS g (id)
    WHERE w.next_seq > w.seq + 1
      AND NOT EXISTS (
          SELECT FROM webhooks.tombstones AS t
          WHERE t.provider = _sequence_gaps.provider
            AND t.seq = g.id)
    ORDER BY g.id
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._sequence_gaps(text, bigint, bigint) IS
  'Private: the ids in [from_seq, to_seq] neither received nor tombstoned for provider, derived from the ids '
  'present (lead() over the (provider, seq) index, generate_series over the holes only, tombstones '
  'anti-joined). No argument checks: call webhooks.find_sequence_gaps().';
REVOKE EXECUTE ON FUNCTION webhooks._sequence_gaps(text, bigint, bigint) FROM PUBLIC;
-- end sql/src/recover/_sequence_gaps.sql
