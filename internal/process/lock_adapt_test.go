package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/pginboxtype"
)

// TestRowLockBatchShrinksWhenHandlersAreSlow: under the row lock a whole
// batch shares one time limit, so handlers that are slow but healthy
// (50 ms each, 16 to a batch, a 300 ms limit) overrun every full batch.
// The pool halves its row-lock batches after each overrun until they fit,
// so the row lock does much of the work and every event still runs exactly
// once; without that, every row-lock batch would roll back and only the
// two-phase fallback would ever process anything. The same for a sql:
// handler, a Go handler, and a Go handler that ignores its context.
func TestRowLockBatchShrinksWhenHandlersAreSlow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes seconds: skipped with -short")
	}
	// A Go handler records, in its own transaction, whether it runs under
	// the row lock: the row is still pending then (a claim makes it
	// processing).
	record := func(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO app.ran SELECT id, status = 'pending' FROM webhooks.events WHERE id = $1`, ev.ID)
		return err
	}
	sqlSlow, err := newSQLHandler("app.slow")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		handler pginboxtype.Handler
	}{
		{"sql", sqlSlow},
		{"go", pginboxtype.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
			if err := record(ctx, tx, ev); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
				return nil
			}
		})},
		{"go ignoring its context", pginboxtype.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
			if err := record(ctx, tx, ev); err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
			return nil
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			slowHandlersShrinkTheBatch(t, c.handler)
		})
	}
}

func slowHandlersShrinkTheBatch(t *testing.T, h pginboxtype.Handler) {
	pool := pgtest.NewPool(t, 8)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		CREATE SCHEMA app;
		CREATE TABLE app.ran (event_id bigint NOT NULL, row_lock boolean NOT NULL);
		CREATE FUNCTION app.slow(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    -- Under the row lock the handler sees no locked_until (the lock
		    -- is the lease); a two-phase claim sets one.
		    INSERT INTO app.ran VALUES (e.id, e.locked_until IS NULL);
		    PERFORM pg_sleep(0.05);
		END $$;
		SELECT count(*) FROM generate_series(1, 128) AS g,
		       webhooks.ingest_webhook('p', 'e' || g, 't', '{}')`); err != nil {
		t.Fatal(err)
	}
	w := &Workers{
		Pool: pool, Handler: h, N: 2, BatchSize: 16, Lease: 10 * time.Second, LeaseMode: "row-lock",
		PollInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second, HandlerTimeout: 300 * time.Millisecond,
		Name: "adapt", Metrics: metrics.New(pool), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	w.fallbackWindow = 200 * time.Millisecond
	if got := w.batchStatementTimeout(); got != 300*time.Millisecond {
		t.Fatalf("batch time limit %v, want the handler timeout", got)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		var processed int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`).Scan(&processed); err != nil {
			t.Fatal(err)
		}
		if processed == 128 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 128 events processed after 60 s", processed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done

	var runs, distinct, underRowLock int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT event_id), count(*) FILTER (WHERE row_lock) FROM app.ran`).
		Scan(&runs, &distinct, &underRowLock); err != nil {
		t.Fatal(err)
	}
	if runs != 128 || distinct != 128 {
		t.Fatalf("committed handler runs %d (%d distinct), want 128 (each event once)", runs, distinct)
	}
	if got := w.lockBatch(); got > 4 {
		t.Errorf("row-lock batch size %d after the overruns, want at most 4 (16 x 50 ms and 8 x 50 ms overrun 300 ms)", got)
	}
	if underRowLock < 16 {
		t.Errorf("only %d of 128 events ran under the row lock: the row-lock batches never shrank to fit the time limit", underRowLock)
	}
	t.Logf("row-lock batch %d; %d events under the row lock, %d with the two-phase lease", w.lockBatch(), underRowLock, runs-underRowLock)
}

// TestLockBatchDone: the row-lock batch size halves after an overrun (not
// below one event, and once for workers that overran together), doubles
// after a full batch that took under a quarter of the limit (not above
// BatchSize), and stays put otherwise.
func TestLockBatchDone(t *testing.T) {
	t.Parallel()
	timedOut := fmt.Errorf("process_pending: %w", errLockBatchTimedOut)
	cases := []struct {
		name     string
		start    int // lockBatch() before
		limit, n int // the batch that finished
		took     time.Duration
		err      error
		want     int
	}{
		{"an overrun halves", 100, 100, 0, time.Second, timedOut, 50},
		{"a second overrun of the same size does not halve again", 50, 100, 0, time.Second, timedOut, 50},
		{"never below one", 1, 1, 0, time.Second, timedOut, 1},
		{"another failure keeps the size", 100, 100, 0, time.Second, errors.New("connection reset"), 100},
		{"a fast full batch doubles", 25, 25, 25, 10 * time.Millisecond, nil, 50},
		{"never above BatchSize", 64, 64, 64, 10 * time.Millisecond, nil, 100},
		{"a slow full batch keeps the size", 25, 25, 25, 300 * time.Millisecond, nil, 25},
		{"a partial batch keeps the size", 25, 25, 3, 10 * time.Millisecond, nil, 25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := &Workers{BatchSize: 100, Lease: 10 * time.Second, HandlerTimeout: time.Second}
			if c.start != 100 {
				w.lockLimit.Store(int64(c.start))
			}
			w.lockBatchDone(c.limit, c.n, c.took, c.err)
			if got := w.lockBatch(); got != c.want {
				t.Fatalf("lockBatch() = %d, want %d", got, c.want)
			}
		})
	}
}
