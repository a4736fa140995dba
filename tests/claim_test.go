package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestClaimConcurrentWorkers runs 8 workers claiming in batches from 2,000
// events on 8 connections. No event may be handed to two workers at once,
// and every event must be completed exactly once.
func TestClaimConcurrentWorkers(t *testing.T) {
	t.Parallel()
	const events, workers = 2000, 8
	pool := NewPool(t, workers+2)
	ctx := context.Background()
	execSQL(t, pool, `
		INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'p', 'e' || g, 't', jsonb_build_object('n', g) FROM generate_series(1, $1) g`, events)
	execSQL(t, pool, `CREATE TABLE public.handled (event_id bigint NOT NULL, worker text NOT NULL)`)

	var mu sync.Mutex
	holder := map[int64]string{} // event -> worker currently holding it
	completions := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			for {
				batch, err := claimBatch(ctx, pool, worker, 7)
				if err != nil {
					errs <- err
					return
				}
				if len(batch) == 0 {
					return
				}
				mu.Lock()
				for _, c := range batch {
					if other, held := holder[c.ID]; held {
						mu.Unlock()
						errs <- fmt.Errorf("event %d handed to %s while %s holds it", c.ID, worker, other)
						return
					}
					holder[c.ID] = worker
				}
				mu.Unlock()
				for _, c := range batch {
					ok, err := completeWithWrite(ctx, pool, c, worker)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					delete(holder, c.ID)
					if ok {
						completions[c.ID]++
					}
					mu.Unlock()
				}
			}
		}(fmt.Sprintf("w%d", w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(completions) != events {
		t.Fatalf("completed %d distinct events, want %d", len(completions), events)
	}
	for id, n := range completions {
		if n != 1 {
			t.Errorf("event %d completed %d times", id, n)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed' AND attempts = 1`); n != events {
		t.Fatalf("processed on the first attempt: %d, want %d", n, events)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT event_id FROM public.handled GROUP BY event_id HAVING count(*) = 1) x`); n != events {
		t.Fatalf("events with exactly one handler write: %d, want %d", n, events)
	}
	if n := queryInt(t, pool, `SELECT count(DISTINCT worker) FROM public.handled`); n < 2 {
		t.Fatalf("only %d worker(s) did any work: the test did not exercise concurrency", n)
	}
}

// claimBatch claims in a transaction of its own, as claim()'s documentation asks.
func claimBatch(ctx context.Context, pool *pgxpool.Pool, worker string, max int) ([]claimed, error) {
	rows, err := pool.Query(ctx, `SELECT id, attempts FROM webhooks.claim($1, $2)`, worker, max)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[claimed])
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}
