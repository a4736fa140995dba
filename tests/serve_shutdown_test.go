package tests

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// TestServeGracefulShutdown: on shutdown the event in hand finishes and the
// rest of the claimed batch is released at once, not left to its lease.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	execSQL(t, pool, `CREATE TABLE public.done (external_id text PRIMARY KEY)`)
	started := make(chan string, 100)
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		started <- ev.ExternalID
		time.Sleep(300 * time.Millisecond)
		_, err := tx.Exec(ctx, `INSERT INTO public.done VALUES ($1)`, ev.ExternalID)
		return err
	})
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'p', 'e' || g, 't', '{}' FROM generate_series(1, 10) g`)
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 1, BatchSize: 10, Lease: time.Hour, PollInterval: 50 * time.Millisecond}, sumeOnly)
	<-started // the first event of the batch is running
	srv.Stop(t)

	done := queryInt(t, pool, `SELECT count(*) FROM public.done`)
	processed := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`)
	if done < 1 || done != processed {
		t.Fatalf("in-flight work: %d handler writes, %d processed; want the running event finished and committed", done, processed)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processing'`); n != 0 {
		t.Fatalf("%d events left locked after a graceful shutdown", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'pending' AND attempts = 1 AND run_after <= now()`); n != 10-processed {
		t.Fatalf("released %d events, want %d ready to run again", n, 10-processed)
	}
}
