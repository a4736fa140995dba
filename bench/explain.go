package main

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// claimPickSQL is the locking pick of webhooks._lock_pending() (the
// default lease's claim), on the queue.
const claimPickSQL = `SELECT e.id FROM webhooks.inbox AS e
WHERE e.status = 'pending' AND NOT e.order_held AND e.run_after <= now() AND e.attempts < e.max_attempts
ORDER BY e.run_after, e.id LIMIT 100 FOR UPDATE SKIP LOCKED`

// keysInsertSQL is the statement of ingest_webhook() that decides created
// against duplicate: a new key into webhooks.keys, whose primary key grows
// with every key kept.
const keysInsertSQL = `INSERT INTO webhooks.keys AS k (provider, external_id, event_id, received_at)
VALUES ('sume', 'evt_explain_new', nextval('webhooks.events_id_seq'), now())
ON CONFLICT ON CONSTRAINT keys_pkey DO NOTHING
RETURNING k.event_id`

// explain runs EXPLAIN (ANALYZE, BUFFERS) in a transaction it rolls back.
func explain(ctx context.Context, pool *pgxpool.Pool, q string, args ...any) string {
	return explainWith(ctx, pool, nil, q, args...)
}

// explainWith is explain after the SET LOCAL statements in set.
func explainWith(ctx context.Context, pool *pgxpool.Pool, set []string, q string, args ...any) string {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "explain: " + err.Error()
	}
	defer tx.Rollback(context.Background())
	for _, s := range set {
		if _, err := tx.Exec(ctx, s); err != nil {
			return "explain: " + err.Error()
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q, args...)
	if err != nil {
		return "explain: " + err.Error()
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "explain: " + err.Error()
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}
