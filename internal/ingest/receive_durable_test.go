package ingest

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestIngestRaisesSynchronousCommit: inside the ingest's transaction, one
// delivery alone or a batch, synchronous_commit is on whatever the session's
// default, except that the stricter remote_apply is kept; the session's own
// value is untouched after.
func TestIngestRaisesSynchronousCommit(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 1)
	ctx := context.Background()
	statements := []struct {
		name string
		run  func(tx pgx.Tx, key string) error
	}{
		{"alone", func(tx pgx.Tx, key string) error {
			var id int64
			var outcome string
			return tx.QueryRow(ctx, ingestSQL, "p", key, "t", "{}", nil, nil).Scan(&id, &outcome)
		}},
		{"batch", func(tx pgx.Tx, key string) error {
			rows, err := tx.Query(ctx, batchSQL, []string{"p", "p"}, []string{key, key + "b"}, []string{"t", "t"}, []string{"{}", "{}"}, [][]byte{nil, nil}, []*string{nil, nil})
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}},
	}
	for i, tc := range []struct{ def, want string }{
		{"off", "on"}, {"local", "on"}, {"remote_write", "on"}, {"on", "on"}, {"remote_apply", "remote_apply"},
	} {
		for _, st := range statements {
			t.Run(st.name+"/"+tc.def, func(t *testing.T) {
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
				var inTx, after string
				if err := st.run(tx, fmt.Sprintf("%s%d", st.name, i)); err != nil {
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
}
