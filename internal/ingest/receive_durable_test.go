package ingest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestIngestRaisesSynchronousCommit: inside the ingest's transaction
// synchronous_commit is on whatever the session's default, except that the
// stricter remote_apply is kept; the session's own value is untouched after.
func TestIngestRaisesSynchronousCommit(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 1)
	ctx := context.Background()
	for i, tc := range []struct{ def, want string }{
		{"off", "on"}, {"local", "on"}, {"remote_write", "on"}, {"on", "on"}, {"remote_apply", "remote_apply"},
	} {
		t.Run(tc.def, func(t *testing.T) {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, `SET synchronous_commit = `+tc.def); err != nil {
				t.Fatal(err)
			}
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var id int64
			var outcome, inTx, after string
			if err := tx.QueryRow(ctx, ingestSQL, "p", fmt.Sprintf("e%d", i), "t", "{}", nil, nil).Scan(&id, &outcome); err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&inTx); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if inTx != tc.want || after != tc.def {
				t.Fatalf("default %s: in the ingest's transaction %s (want %s), after it %s (want %s)", tc.def, inTx, tc.want, after, tc.def)
			}
		})
	}
}
