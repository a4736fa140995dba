package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestOrderingIngestBatchesShareSequences: eight senders store batches of
// deliveries of the same six customers at once, each batch's external ids
// random, so that two batches would take the customers' sequence locks in
// crossing orders. ingest_batch takes them in the order of the sequences'
// keys, so batches wait for each other briefly instead of deadlocking:
// every delivery is created, none answered retry, no call fails.
func TestOrderingIngestBatchesShareSequences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t, 8)
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)
	var retries, deadlocks, created atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < 40; b++ {
				var ps, ids, types, payloads []string
				for i := 0; i < 6; i++ {
					ps = append(ps, "stripe")
					ids = append(ids, fmt.Sprintf("%08x-%d-%d-%d", rand.Uint32(), s, b, i))
					types = append(types, "t")
					payloads = append(payloads, fmt.Sprintf(`{"customer": "cus_%d", "seq": %d}`, rand.IntN(6), b))
				}
				rows, err := pool.Query(ctx, `SELECT outcome FROM webhooks.ingest_batch($1, $2, $3, $4::text[]::jsonb[])`, ps, ids, types, payloads)
				if err != nil {
					errs <- err
					return
				}
				for rows.Next() {
					var outcome string
					if err := rows.Scan(&outcome); err != nil {
						errs <- err
						return
					}
					switch outcome {
					case "retry":
						retries.Add(1)
					case "created":
						created.Add(1)
					}
				}
				if err := rows.Err(); err != nil {
					if pgErr, ok := err.(*pgconn.PgError); ok && pgErr.Code == "40P01" {
						deadlocks.Add(1)
						continue
					}
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d created, %d retry, %d deadlocks", created.Load(), retries.Load(), deadlocks.Load())
	if retries.Load() != 0 || deadlocks.Load() != 0 || created.Load() != 8*40*6 {
		t.Fatalf("%d created of %d, %d answered retry, %d batches deadlocked", created.Load(), 8*40*6, retries.Load(), deadlocks.Load())
	}
}
