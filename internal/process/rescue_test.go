package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/pginboxtype"
)

// TestStaleWorkerClaimsPastItsHeldLeases: a worker that lost track of its
// leases while one of them is still row-locked by another transaction (its
// own batch transaction on a connection that broke, which the server has
// not ended) goes on claiming and processing other events at once, and
// takes the held one back as soon as that transaction ends. Before,
// rescue_worker() waited for the lock, was cancelled after 10 s, and the
// worker retried it for as long as the lock lasted without ever claiming.
//
// The worker goes stale for real: its handler ends its own backend, so the
// batch's outcome cannot be recorded. Another connection holds the row
// lock of an event claimed under the worker's name (the abandoned backend).
func TestStaleWorkerClaimsPastItsHeldLeases(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 8)
	ctx := context.Background()
	const name = "stale/w0"
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE SCHEMA app; CREATE TABLE app.ran (external_id text NOT NULL)`)
	exec(`SELECT webhooks.ingest_webhook('p', 'held', 't', '{}')`)
	exec(`SELECT count(*) FROM webhooks.claim($1, 1, '5 minutes')`, name)
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // released below
	if _, err := holder.Exec(ctx, `SELECT 1 FROM webhooks.inbox WHERE external_id = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	exec(`SELECT webhooks.ingest_webhook('p', 'kill', 't', '{}')`)

	var killed atomic.Bool
	h := pginboxtype.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
		if ev.ExternalID == "kill" && killed.CompareAndSwap(false, true) {
			_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return errors.Join(errors.New("the handler ended its own backend"), err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO app.ran VALUES ($1)`, ev.ExternalID)
		return err
	})
	w := &Workers{
		Pool: pool, Handler: h, N: 1, BatchSize: 10, Lease: 5 * time.Minute,
		PollInterval: 100 * time.Millisecond, ShutdownTimeout: 5 * time.Second, HandlerTimeout: 5 * time.Second,
		Name: "stale", Metrics: metrics.New(pool), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	ran := func(id string) bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM app.ran WHERE external_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	waitUntil := func(d time.Duration, what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s not within %v", what, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil(5*time.Second, "the handler ending its backend", killed.Load)
	// From here on the worker is stale, and one of its leases is held.
	for _, id := range []string{"m1", "m2", "m3"} {
		exec(`SELECT webhooks.ingest_webhook('p', $1, 't', '{}')`, id)
	}
	waitUntil(5*time.Second, "the stale worker taking back its killed batch and processing it and three new events while a lease of its is held",
		func() bool { return ran("kill") && ran("m1") && ran("m2") && ran("m3") })

	type state struct {
		status, lockedBy string
		attempts, given  int
	}
	read := func(id string) state {
		t.Helper()
		var s state
		if err := pool.QueryRow(ctx, `
			SELECT e.status, coalesce(e.locked_by, ''), e.attempts,
			       (SELECT count(*) FROM webhooks.event_errors AS x WHERE x.event_id = e.id AND x.error LIKE '%given back by its worker%')
			FROM webhooks.events AS e WHERE e.external_id = $1`, id).Scan(&s.status, &s.lockedBy, &s.attempts, &s.given); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The killed batch came back through rescue_worker(), not lease expiry
	// (the lease is 5 minutes): its attempt counted, the reason kept.
	if got, want := read("kill"), (state{"processed", "", 2, 1}); got != want {
		t.Errorf("kill: %+v, want %+v", got, want)
	}
	if got, want := read("held"), (state{"processing", name, 1, 0}); got != want {
		t.Fatalf("held, while its row lock lasts: %+v, want %+v", got, want)
	}

	// The abandoned transaction ends: the worker takes the event back on
	// its next turn and runs it again.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(5*time.Second, "the worker taking back the event once the lock was released, and processing it", func() bool { return ran("held") })
	if got, want := read("held"), (state{"processed", "", 2, 1}); got != want {
		t.Errorf("held, after the lock was released: %+v, want %+v", got, want)
	}
}

// TestTwoPhaseEventBoundsAnAbandonedTransaction: the network goes half-open
// (packets vanish, nobody sees a close) while a Go handler runs inside the
// two-phase transaction, after an earlier event of the batch completed in
// it. On the worker's side every statement that follows is bounded — the
// ROLLBACK TO SAVEPOINT of the failed handler included — so the batch gives
// up within recordTimeout and leaves its leases to rescue_worker(). On the
// server's side the abandoned backend holds the completed event's row
// lock: rescue_worker() skips it at once (held) instead of waiting, and the
// server ends that backend itself once it has sat idle in its transaction
// for the handler timeout and recordTimeout (SET LOCAL
// idle_in_transaction_session_timeout), after which the event is taken
// back too.
func TestTwoPhaseEventBoundsAnAbandonedTransaction(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out a 10 s statement bound: skipped with -short")
	}
	conf := pgtest.NewConfig(t)
	direct := pgtest.PoolFor(t, conf.URL(), 4)
	proxy := pgtest.StartFreezeProxy(t, net.JoinHostPort(conf.Host, conf.Port))
	u, err := url.Parse(conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	proxied := pgtest.PoolFor(t, u.String(), 2)
	// Cleanups run last first: drop the proxied connections before the
	// pool waits (15 s) to say goodbye on a frozen one.
	t.Cleanup(proxy.Close)
	ctx := context.Background()
	if _, err := direct.Exec(ctx, `SELECT webhooks.ingest_webhook('p', 'first', 't', '{}'), webhooks.ingest_webhook('p', 'second', 't', '{}')`); err != nil {
		t.Fatal(err)
	}

	const handlerTimeout = time.Second
	var pid atomic.Int32
	frozen := make(chan time.Time, 1)
	h := pginboxtype.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
		if ev.ExternalID == "first" {
			return nil // completes in the batch transaction: its row is locked there
		}
		var p int32
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&p); err != nil {
			return err
		}
		pid.Store(p)
		proxy.Freeze()
		frozen <- time.Now()
		return errors.New("the handler failed after the network went half-open")
	})
	w := &Workers{
		Pool: proxied, Handler: h, N: 1, BatchSize: 2, Lease: 5 * time.Minute, HandlerTimeout: handlerTimeout,
		Name: "halfopen", Metrics: metrics.New(direct), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	w.init()
	const name = "halfopen/w0"
	events, err := w.claim(ctx, name)
	if err != nil || len(events) != 2 || events[0].ExternalID != "first" {
		t.Fatalf("claim: %d events, %v; want first and second", len(events), err)
	}
	b := &batch{worker: name, log: w.Log, events: events, st: &batchState{}}
	returned := make(chan time.Time, 1)
	go func() {
		_, _ = twoPhaseEvent{w}.handle(ctx, ctx, b)
		returned <- time.Now()
	}()
	var froze time.Time
	select {
	case froze = <-frozen:
	case <-time.After(10 * time.Second):
		t.Fatal("the second handler did not run")
	}

	// While the abandoned backend lives: the second event (never completed)
	// is taken back at once, the first (completed in the abandoned
	// transaction, row-locked there) is held, not waited for.
	rescue := func() (rescued, dead, held int) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := direct.QueryRow(rctx, `SELECT rescued, dead, held FROM webhooks.rescue_worker($1)`, name).Scan(&rescued, &dead, &held); err != nil {
			t.Fatalf("rescue_worker while the abandoned transaction holds a row: %v", err)
		}
		return rescued, dead, held
	}
	if r, d, hd := rescue(); r != 1 || d != 0 || hd != 1 {
		t.Fatalf("rescue_worker while abandoned = (%d, %d, %d), want (1, 0, 1): the second back, the first held", r, d, hd)
	}

	select {
	case at := <-returned:
		if took := at.Sub(froze); took > recordTimeout+5*time.Second {
			t.Errorf("the batch gave up %v after the network went, want about recordTimeout (%v)", took, recordTimeout)
		}
	case <-time.After(recordTimeout + 20*time.Second):
		t.Fatalf("the batch was still waiting %v after the network went: a statement of the two-phase transaction is not bounded", recordTimeout+20*time.Second)
	}
	if !b.leftLeases {
		t.Error("the batch did not report leases left to take back")
	}
	t.Logf("the batch gave up %v after the network went", time.Since(froze).Round(100*time.Millisecond))

	bound := handlerTimeout + recordTimeout
	deadline := froze.Add(bound + 5*time.Second)
	for {
		var alive int
		if err := direct.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid.Load()).Scan(&alive); err != nil {
			t.Fatal(err)
		}
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned backend %d still lives %v after the network went; the server should end it after %v idle in transaction",
				pid.Load(), time.Since(froze).Round(time.Second), bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the server ended the abandoned backend %v after the network went", time.Since(froze).Round(100*time.Millisecond))
	if took := time.Since(froze); took < bound-time.Second {
		t.Errorf("the abandoned backend ended %v after the network went, before its bound %v: something else ended it", took, bound)
	}
	// Its transaction rolled back: the first event is its worker's again,
	// and nothing holds it.
	if r, d, hd := rescue(); r != 1 || d != 0 || hd != 0 {
		t.Fatalf("rescue_worker after the server ended the backend = (%d, %d, %d), want (1, 0, 0)", r, d, hd)
	}
}

// TestTwoPhaseTransactionIdleBound: the two-phase transaction sets its
// idle_in_transaction_session_timeout to the handler timeout and
// recordTimeout more (a Go handler runs inside it), for that transaction
// only; without a handler timeout it sets none.
func TestTwoPhaseTransactionIdleBound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		handlerTimeout time.Duration
		want           string
	}{
		{"handler timeout", 2 * time.Second, "12s"},
		{"no handler timeout", 0, "0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t, 1)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('p', 'e', 't', '{}')`); err != nil {
				t.Fatal(err)
			}
			var inTx string
			h := pginboxtype.HandlerFunc(func(ctx context.Context, tx pgx.Tx, _ *pginboxtype.Event) error {
				return tx.QueryRow(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&inTx)
			})
			w := &Workers{
				Pool: pool, Handler: h, N: 1, BatchSize: 1, Lease: time.Minute, HandlerTimeout: c.handlerTimeout,
				Name: "idle", Metrics: metrics.New(pool), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			}
			w.init()
			events, err := w.claim(ctx, "idle/w0")
			if err != nil || len(events) != 1 {
				t.Fatalf("claim: %d events, %v", len(events), err)
			}
			b := &batch{worker: "idle/w0", log: w.Log, events: events, st: &batchState{}}
			if n, err := (twoPhaseEvent{w}).handle(ctx, ctx, b); n != 1 || err != nil || b.leftLeases {
				t.Fatalf("handle = %d, %v (left leases %v)", n, err, b.leftLeases)
			}
			if inTx != c.want {
				t.Errorf("idle_in_transaction_session_timeout in the transaction = %q, want %q", inTx, c.want)
			}
			var after string
			if err := pool.QueryRow(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != "0" {
				t.Errorf("idle_in_transaction_session_timeout on the connection after the batch = %q, want 0 (SET LOCAL)", after)
			}
		})
	}
}
