package tests

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// TestSlowHandlerOutlivesLease: a handler that hangs past its timeout (and
// ignores its context) stops being heartbeated; its lease expires, the event
// is rescued and run by another worker, and the slow worker's completion is
// refused, its writes rolled back.
func TestSlowHandlerOutlivesLease(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	execSQL(t, pool, `CREATE TABLE public.runs (external_id text, attempt int, at timestamptz DEFAULT clock_timestamp())`)
	released := make(chan struct{})
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		if ev.Attempt == 1 {
			<-released // hung, deaf to ctx
		}
		_, err := tx.Exec(context.Background(), `INSERT INTO public.runs (external_id, attempt) VALUES ($1, $2)`, ev.ExternalID, ev.Attempt)
		return err
	})
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'slow', 't', '{}')`)
	startServer(t, conf.URL(), runner.Config{
		Handler: h, Workers: 2, BatchSize: 1, Lease: time.Second, HandlerTimeout: 300 * time.Millisecond,
		PollInterval: 100 * time.Millisecond,
	}, sumeOnly)

	// The rescuer (reconcile's job) runs while the first attempt hangs.
	waitFor(t, 20*time.Second, "the event rescued and completed by another worker", func() bool {
		execSQL(t, pool, `SELECT webhooks.rescue_leases()`)
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND status = 'processed' AND attempts = 2`) == 1
	})
	close(released) // the hung handler wakes up, writes, and tries to complete
	time.Sleep(time.Second)
	var attempts []int32
	rows, err := pool.Query(context.Background(), `SELECT attempt FROM public.runs WHERE external_id = 'slow' ORDER BY attempt`)
	if err != nil {
		t.Fatal(err)
	}
	attempts, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || attempts[0] != 2 {
		t.Fatalf("committed runs by attempt %v, want exactly one, by attempt 2", attempts)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND status = 'processed' AND attempts = 2`); n != 1 {
		t.Fatal("the stale completion changed the processed event")
	}
}
