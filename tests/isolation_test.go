package tests

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestIngestUnderStrictIsolation: a REPEATABLE READ or SERIALIZABLE caller
// whose snapshot predates a concurrent delivery of the same id gets SQLSTATE
// 40001 (documented); retried in a new transaction it sees a duplicate.
// Deliveries that do not conflict work as usual.
func TestIngestUnderStrictIsolation(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(level), func(t *testing.T) {
			key := "job_" + string(level)[:4]
			tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			// The snapshot is taken by the first statement.
			var fresh string
			if err := tx.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('p', $1 || '_other', 't', '{}')`, key).Scan(&fresh); err != nil || fresh != "created" {
				t.Fatalf("non-conflicting delivery: %q, %v", fresh, err)
			}
			// Another connection delivers the same id and commits.
			if _, outcome := ingest(t, pool, "p", key, "t", `{"v": 1}`); outcome != "created" {
				t.Fatalf("concurrent delivery: %q", outcome)
			}
			_, err = tx.Exec(ctx, `SELECT * FROM webhooks.ingest_webhook('p', $1, 't', '{"v": 1}')`, key)
			wantPgError(t, err, "40001", "could not serialize access")
			_ = tx.Rollback(ctx)

			// The documented remedy: retry the transaction.
			tx2, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
			if err != nil {
				t.Fatal(err)
			}
			var outcome string
			if err := tx2.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('p', $1, 't', '{"v": 1}')`, key).Scan(&outcome); err != nil {
				t.Fatal(err)
			}
			if err := tx2.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if outcome != "duplicate" {
				t.Fatalf("retry: %q, want duplicate", outcome)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = $1`, key); n != 1 {
				t.Fatalf("rows %d", n)
			}
		})
	}
}
