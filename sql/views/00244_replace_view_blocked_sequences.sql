-- +goose Up
-- A view is dropped and created again. A view that depends on this one
-- must be dropped before and created after: add it here.
DROP VIEW webhooks.blocked_sequences;
-- begin sql/src/order/blocked_sequences.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks.blocked_sequences: the sequences of ordered providers
-- (webhooks.ordering) whose head cannot run: it failed and waits for its
-- next attempt (pending, attempts > 0), or it is dead while its provider's
-- dead_blocks holds the sequence. One row per such sequence, with its head
-- event, since when it blocks (the first failure of the head's current run:
-- its latest webhooks.event_errors row of attempt 1, else its last claim),
-- and how many unfinished events of the sequence sort after it.
--
-- A plain view, read live and cheaply: the candidates come from
-- events_order_attention_idx (ordered events that failed at least once and
-- are pending or dead, and late arrivals, however large the table or the
-- backlog); the head test (the sequence's first unfinished event: LIMIT 1
-- in a LATERAL, which the planner cannot turn into a hash join over the
-- table whatever its estimates) and the count are range reads of the
-- unfinished events in events_order_idx. They spell its expressions
-- exactly, and its predicate's status <> 'processed', so the partial index
-- serves them (TestBlockedSequencesPlan).
CREATE VIEW webhooks.blocked_sequences AS
SELECT h.provider,
       h.order_key           AS sequence_key,
       h.id                  AS head_event_id,
       h.status              AS head_status,
       h.event_type          AS head_event_type,
       h.external_id         AS head_external_id,
       h.attempts,
       h.max_attempts,
       h.last_error,
       CASE WHEN h.status = 'pending' THEN h.run_after END AS next_attempt_at,
       coalesce(f.first_failed_at, h.claimed_at, h.updated_at) AS blocked_since,
       w.waiting
FROM webhooks.inbox AS h
JOIN webhooks.ordering AS o ON o.provider = h.provider
-- The head of h's sequence: its first unfinished event in order (a dead
-- one counts only while dead_blocks). One short index read per candidate.
CROSS JOIN LATERAL (
    SELECT b.id
    FROM webhooks.inbox AS b
    WHERE b.provider = h.provider
      AND b.order_key = h.order_key
      AND b.order_key IS NOT NULL
      AND b.status <> 'processed'
      AND (b.status <> 'dead' OR o.dead_blocks)
    ORDER BY (coalesce(b.order_num, 'NaN'::numeric)), (coalesce(b.order_text, '') COLLATE "C"), b.received_at, b.id
    LIMIT 1
) AS head
LEFT JOIN LATERAL (
    SELECT max(x.at) AS first_failed_at
    FROM webhooks.event_errors AS x
    WHERE x.event_id = h.id AND x.attempt = 1
) AS f ON true
CROSS JOIN LATERAL (
    SELECT count(*) AS waiting
    FROM webhooks.inbox AS a
    WHERE a.provider = h.provider
      AND a.order_key = h.order_key
      AND a.order_key IS NOT NULL
      AND a.status <> 'processed'
      AND (coalesce(a.order_num, 'NaN'::numeric), coalesce(a.order_text, '') COLLATE "C", a.received_at, a.id)
        > (coalesce(h.order_num, 'NaN'::numeric), coalesce(h.order_text, '') COLLATE "C", h.received_at, h.id)
) AS w
WHERE h.order_key IS NOT NULL
  AND h.attempts > 0
  AND h.status IN ('pending', 'dead')
  AND (h.status = 'pending' OR o.dead_blocks)
  AND head.id = h.id;

REVOKE ALL ON TABLE webhooks.blocked_sequences FROM PUBLIC;

COMMENT ON VIEW webhooks.blocked_sequences IS
  'Sequences of ordered providers whose head cannot run: failed and waiting for its next attempt, or dead while '
  'dead_blocks. Per sequence: provider, sequence_key, the head event (id, status, type, external id, attempts, '
  'last_error, next_attempt_at), blocked_since (its first failure of the current run) and how many unfinished '
  'events of the sequence wait behind it.';
-- end sql/src/order/blocked_sequences.sql
