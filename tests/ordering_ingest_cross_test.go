package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestOrderingIngestBatchesShareSequences: eight senders store batches of
// deliveries of the same six customers at once, each batch's external ids
// random, so that two batches would take the customers' sequence locks in
// crossing orders. ingest_batch takes them in the order of the sequences'
// keys, so batches wait for each other briefly instead of holding each
// other: no call deadlocks, every delivery is created, and fewer than 5% of
// them come back retry (resent, as a caller must, until created; a batch
// can still wait past its 250 ms for a busy neighbour on a loaded machine).
// Taken in the order of the external ids, 278 of these 320 batches
// deadlocked before the wait was bounded, and 1030 of the 1920 deliveries
// came back retry after.
func TestOrderingIngestBatchesShareSequences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t, 8)
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)
	const senders, batches, size = 8, 40, 6
	var retries, deadlocks, created atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				var ids, payloads []string
				for i := 0; i < size; i++ {
					ids = append(ids, fmt.Sprintf("%08x-%d-%d-%d", rand.Uint32(), s, b, i))
					payloads = append(payloads, fmt.Sprintf(`{"customer": "cus_%d", "seq": %d}`, rand.IntN(6), b))
				}
				for try := 0; len(ids) > 0; try++ {
					if try == 20 {
						errs <- fmt.Errorf("%d deliveries not created after 20 tries (retry or deadlock)", len(ids))
						return
					}
					left, err := storeBatch(ctx, pool, ids, payloads)
					var pgErr *pgconn.PgError
					if errors.As(err, &pgErr) && pgErr.Code == "40P01" {
						deadlocks.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					created.Add(int64(len(ids) - len(left)))
					retries.Add(int64(len(left)))
					next := ids[:0:0]
					var nextPayloads []string
					for _, i := range left {
						next, nextPayloads = append(next, ids[i]), append(nextPayloads, payloads[i])
					}
					ids, payloads = next, nextPayloads
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d created, %d answered retry first, %d batches deadlocked", created.Load(), retries.Load(), deadlocks.Load())
	if deadlocks.Load() != 0 || created.Load() != senders*batches*size || retries.Load()*20 >= senders*batches*size {
		t.Fatalf("%d created of %d, %d answered retry, %d batches deadlocked", created.Load(), senders*batches*size,
			retries.Load(), deadlocks.Load())
	}
}

// storeBatch stores one batch of stripe deliveries and returns the indexes
// of those answered retry; any other outcome than created is an error.
func storeBatch(ctx context.Context, pool *pgxpool.Pool, ids, payloads []string) ([]int, error) {
	ps, types := make([]string, len(ids)), make([]string, len(ids))
	for i := range ids {
		ps[i], types[i] = "stripe", "t"
	}
	rows, err := pool.Query(ctx, `SELECT ordinal, outcome FROM webhooks.ingest_batch($1, $2, $3, $4::text[]::jsonb[])`,
		ps, ids, types, payloads)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var left []int
	for rows.Next() {
		var ord int
		var outcome string
		if err := rows.Scan(&ord, &outcome); err != nil {
			return nil, err
		}
		switch outcome {
		case "retry":
			left = append(left, ord-1)
		case "created":
		default:
			return nil, fmt.Errorf("%s: %s", ids[ord-1], outcome)
		}
	}
	return left, rows.Err()
}
