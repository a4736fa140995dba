package process

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestClaimCommitsAsynchronouslyOnlyItself: the claim statement turns
// synchronous_commit off for its own transaction and nothing else — the
// connection's next transaction (a batch's completions) is flushed again.
// The statement runs inside an explicit transaction so that the setting it
// makes can be seen before that transaction ends.
func TestClaimCommitsAsynchronouslyOnlyItself(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 1)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('p', 'e1', 't', '{}')`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	show := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) string {
		t.Helper()
		var setting string
		if err := q.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&setting); err != nil {
			t.Fatal(err)
		}
		return setting
	}
	// The throwaway test cluster defaults to synchronous_commit = off; the
	// runner's own sessions (and a production server) have it on.
	if _, err := conn.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rollback after commit is a no-op
	rows, err := tx.Query(ctx, claimSQL, "w", 10, "1 minute")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("claimed %d events, want 1", n)
	}
	if got := show(tx); got != "off" {
		t.Fatalf("in the claim's transaction synchronous_commit is %q, want off", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := show(conn); got != "on" {
		t.Fatalf("after the claim the session's synchronous_commit is %q, want on", got)
	}
	var status string
	if err := conn.QueryRow(ctx, `SELECT status FROM webhooks.events WHERE external_id = 'e1'`).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != "processing" {
		t.Fatalf("status %q after the claim committed", status)
	}
}
