// Package process runs a handler on stored events: the worker goroutines,
// the handler kinds (sql:, http:, a Go [pginboxtype.Handler]), and the
// lease strategies that hold events while a handler runs — each in a file
// of its own behind one interface (lease.go) — with the policy that picks
// one and falls back from one to another in one place (policy.go).
package process

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/tracing"
	"github.com/pginbox/pginbox/pginboxtype"
)

// Workers run a Handler on pending events: N goroutines that wake on
// [Workers.Wake] or every PollInterval, take a batch and run the handler on
// it under one of the lease strategies (see leaseStrategy); which one, and
// when to fall back from one to another, is the policy in policy.go.
//
// Set the fields, then call Run; the zero value is not usable.
type Workers struct {
	// Pool runs the workers' statements.
	Pool *pgxpool.Pool
	// Handler runs on each event (sql:, http:, or a Go Handler).
	Handler pginboxtype.Handler
	// N is the number of worker goroutines; BatchSize how many events each
	// takes at once.
	N, BatchSize int
	// Lease is the claim's lease; it is extended by heartbeats while a batch
	// runs.
	Lease time.Duration
	// PollInterval is the backstop: an idle worker looks for work at least
	// this often.
	PollInterval time.Duration
	// ShutdownTimeout is how long in-flight handlers may run after Run's
	// context ends; claimed but unstarted events are released at once.
	ShutdownTimeout time.Duration
	// HandlerTimeout bounds one handler call (its context's deadline). A
	// handler still running past it no longer has its lease extended, so even
	// one that ignores its context is rescued and run elsewhere once the
	// lease expires — and its own completion is then refused. Plus
	// recordTimeout, it also bounds how long a two-phase batch transaction,
	// which a Go handler runs in, may sit idle on the server
	// (idleInTransaction); zero sets no such bound.
	HandlerTimeout time.Duration
	// LeaseMode is PGINBOX_LEASE_MODE: "two-phase" runs every handler with
	// the two-phase lease (claim(), then the handler under a heartbeated
	// lease, then complete()); "row-lock" runs a Go Handler with the row
	// lock as the lease too; empty is the row lock for sql: handlers and
	// the two-phase lease for the others. http: handlers always use the
	// two-phase lease. See policy.go.
	LeaseMode string
	// Name prefixes the worker names (locked_by).
	Name string
	// Metrics records claims, outcomes, wake-ups and fallbacks.
	Metrics *metrics.Set
	// Log receives the workers' warnings and failed handlers.
	Log *slog.Logger
	// Tracing, when enabled, gives each handler run a pginbox.process span
	// in the trace of the delivery that stored the event (trace.go). Nil:
	// off.
	Tracing *tracing.Tracing

	wake chan struct{}
	once sync.Once
	// traceReadWarn logs once that traceRows cannot read the events.
	traceReadWarn sync.Once
	// strategies are the lease strategies the policy picks from, set by init.
	strategies
	lockState
}

func (w *Workers) init() {
	w.once.Do(func() {
		w.wake = make(chan struct{}, 1)
		w.strategies = w.strategiesFor(w.Handler)
	})
}

// Wake tells an idle worker to look for work now. It never blocks; many
// wake-ups coalesce.
func (w *Workers) Wake(source string) {
	w.init()
	select {
	case w.wake <- struct{}{}:
		w.Metrics.Wakeups.WithLabelValues(source).Inc()
	default:
	}
}

// Run starts the workers and returns when all have stopped: after ctx ends
// they stop claiming, finish (within ShutdownTimeout) the event in hand and
// release the rest of their batch.
func (w *Workers) Run(ctx context.Context) {
	w.init()
	// Handlers get a context that outlives ctx by ShutdownTimeout.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	go func() {
		<-ctx.Done()
		select {
		case <-time.After(w.ShutdownTimeout):
			hcancel()
		case <-hctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < w.N; i++ {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			w.loop(ctx, hctx, name)
		}(fmt.Sprintf("%s/w%d", w.Name, i))
	}
	wg.Wait()
}

func (w *Workers) loop(ctx, hctx context.Context, name string) {
	log := w.Log.With("worker", name)
	poll := time.NewTimer(0)
	defer poll.Stop()
	backoff := time.Duration(0)
	// Leases this worker may have lost track of: it takes them back before
	// it claims, without ever waiting for them (rescueOwn); those another
	// transaction still holds it takes back on a later turn.
	var lost rescueState
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-poll.C:
			w.Metrics.Wakeups.WithLabelValues("poll").Inc()
		}
		for ctx.Err() == nil {
			if lost.due() {
				// Before anything else, row-lock batches included: the
				// parked events may be the heads of ordered sequences. A
				// failure holds nothing up: the worker claims anyway and
				// tries again rescueRetry later.
				if err := w.rescueOwn(ctx, log, name, &lost); err != nil && ctx.Err() == nil {
					log.Warn("taking back this worker's lost leases failed; claiming anyway", "error", err, "retry_in", rescueRetry)
				}
			}
			if lease := w.rowLockNow(); lease != nil {
				n, limit, err := w.runRowLock(hctx, log, name, lease)
				if err == nil {
					backoff = 0
					if n == limit {
						w.Wake("cascade")
						continue
					}
					if n > 0 {
						// What just completed may have released more (the
						// next event of an ordered sequence): look again
						// before sleeping, until a look finds nothing.
						continue
					}
					break
				}
				if hctx.Err() != nil {
					return // shutdown deadline: the statement rolled back, the events are pending
				}
				// Not dealt with: the policy has switched to the two-phase lease.
			}
			batch, err := w.claim(ctx, name)
			if err != nil {
				// Whatever failed, the claim may have committed (a reply
				// the connection lost): its events would be this worker's,
				// unseen, until their lease expired.
				lost.markStale()
				if !w.retryAfter(ctx, log, &backoff, "claim failed", err) {
					return
				}
				continue
			}
			backoff = 0
			if len(batch) == 0 {
				break
			}
			if len(batch) == w.BatchSize {
				w.Wake("cascade") // more is waiting: get another worker going
			}
			// Then look again, even after a short batch: what it completed
			// may have released more (the next event of an ordered
			// sequence). The loop ends when a claim finds nothing.
			if !w.runClaimed(ctx, hctx, log, name, batch) {
				lost.markStale()
			}
		}
		// A stale worker wakes when its next rescueOwn is due.
		poll.Reset(lost.wait(w.PollInterval))
	}
}

// retryAfter logs a failed statement and waits the next backoff (doubling
// from 100 ms to 5 s); it returns false when ctx ended.
func (w *Workers) retryAfter(ctx context.Context, log *slog.Logger, backoff *time.Duration, what string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	*backoff = min(max(2**backoff, 100*time.Millisecond), 5*time.Second)
	log.Warn(what+"; retrying", "error", err, "in", *backoff)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*backoff):
		return true
	}
}

// claimColumns are the webhooks.events columns scanned into an Event.
const claimColumns = `id, provider, external_id, event_type, payload, source, received_at, attempts, max_attempts, locked_until,
	coalesce(trace_parent, ''), coalesce(trace_link, '')`

// claimSQL claims a batch in a transaction of its own (one statement) that
// commits without waiting for its WAL flush (set_config(..., true) is local
// to the statement's own transaction). That is safe: a claim lost in a
// crash only means the lease was never taken — the event is still pending —
// and any completion that does commit is flushed with everything before it
// in the WAL, the claim included. It takes one flush off every wake-up.
const claimSQL = `SELECT ` + claimColumns + ` FROM webhooks.claim($1, $2, $3::interval)
	WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL ORDER BY run_after, id`

// recordTimeout bounds each statement that takes, extends, records or
// gives back a lease outside a batch statement — claim(), complete(),
// fail(), release(), rescue_worker(), heartbeat() and the two-phase
// transaction's begin, savepoints and commit — so a connection whose packets vanish (a
// black hole: nothing closes it) fails that statement, and the worker
// reconnects, instead of waiting for ever for a reply. The statement is
// cancelled and, 5 seconds later, the connection given up
// (database.cancelHandler).
const recordTimeout = 10 * time.Second

// bounded is ctx bounded by recordTimeout.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, recordTimeout)
}

// claim takes a batch.
func (w *Workers) claim(ctx context.Context, name string) ([]*pginboxtype.Event, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	rows, err := w.Pool.Query(ctx, claimSQL, name, w.BatchSize, w.Lease.String())
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	w.Metrics.Claimed.Add(float64(len(events)))
	return events, nil
}

// scanEvent reads one row of claimColumns.
func scanEvent(row pgx.CollectableRow) (*pginboxtype.Event, error) {
	var ev pginboxtype.Event
	var payload []byte
	err := row.Scan(&ev.ID, &ev.Provider, &ev.ExternalID, &ev.EventType, &payload, &ev.Source,
		&ev.ReceivedAt, &ev.Attempt, &ev.MaxAttempts, &ev.LockedUntil, &ev.Trace.Parent, &ev.Trace.Link)
	ev.Payload = payload
	return &ev, err
}

// batchState is what the heartbeat needs to know about a running batch.
type batchState struct {
	next    atomic.Int64 // index of the first unfinished event
	started atomic.Int64 // when the current handler call started (unix ns)
}

func (st *batchState) start(i int) {
	st.next.Store(int64(i))
	st.started.Store(time.Now().UnixNano())
}

// recordOutcomes counts a committed batch in the metrics: completed events,
// failures by their new status, and completions refused by the fence.
func (w *Workers) recordOutcomes(completed int, failed map[string]int, lost int) {
	w.Metrics.Completed.Add(float64(completed))
	for status, n := range failed {
		w.Metrics.Failed.WithLabelValues(status).Add(float64(n))
	}
	w.Metrics.LostLeases.Add(float64(lost))
}

// leases returns the (id, attempt) pairs that fence a batch's events, as
// the parallel arrays the SQL functions take.
func leases(events []*pginboxtype.Event) (ids []int64, attempts []int32) {
	ids = make([]int64, len(events))
	attempts = make([]int32, len(events))
	for i, ev := range events {
		ids[i], attempts[i] = ev.ID, ev.Attempt
	}
	return ids, attempts
}

// safeHandle runs the handler under HandlerTimeout, turning a panic into
// an error.
func (w *Workers) safeHandle(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) (err error) {
	start := time.Now()
	if w.HandlerTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.HandlerTimeout)
		defer cancel()
	}
	defer func() {
		w.Metrics.HandlerSeconds.Observe(time.Since(start).Seconds())
		if r := recover(); r != nil {
			w.Metrics.HandlerPanics.Inc()
			w.Log.Error("handler panicked", "event", ev.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return w.Handler.Handle(ctx, tx, ev)
}

// heartbeat extends the leases of the batch's unfinished events every
// Lease/3 until ctx ends, and stops for good once the current handler has
// overrun HandlerTimeout: a hung handler must not hold its batch forever.
func (w *Workers) heartbeat(ctx context.Context, log *slog.Logger, name string, batch []*pginboxtype.Event, st *batchState) {
	t := time.NewTicker(w.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if started := st.started.Load(); w.HandlerTimeout > 0 && started != 0 &&
			time.Since(time.Unix(0, started)) > w.HandlerTimeout {
			log.Warn("handler overran its timeout; letting the batch's leases expire so it is rescued", "event", batch[st.next.Load()].ID)
			return
		}
		rest := batch[st.next.Load():]
		ids, attempts := leases(rest)
		var kept int
		bctx, cancel := bounded(ctx)
		err := w.Pool.QueryRow(bctx, `
			SELECT count(*) FILTER (WHERE webhooks.heartbeat(x.id, $3, x.attempt, $4::interval))
			FROM unnest($1::bigint[], $2::int[]) AS x(id, attempt)`,
			ids, attempts, name, w.Lease.String()).Scan(&kept)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Warn("heartbeat failed", "error", err)
		} else if err == nil && kept < len(rest) {
			// Either lost, or completed in the open batch transaction a moment ago.
			log.Debug("heartbeat did not extend every lease", "not_extended", len(rest)-kept)
		}
	}
}

// release hands unstarted events back for others to run now. It returns
// false when it could not: the events are still this worker's.
func (w *Workers) release(log *slog.Logger, name string, rest []*pginboxtype.Event) bool {
	ctx, cancel := bounded(context.Background())
	defer cancel()
	ids, attempts := leases(rest)
	var n int
	err := w.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE webhooks.release(x.id, $3, x.attempt))
		FROM unnest($1::bigint[], $2::int[]) AS x(id, attempt)`, ids, attempts, name).Scan(&n)
	if err != nil {
		log.Warn("release failed; the worker takes the events back before its next claim", "events", len(rest), "error", err)
		return false
	}
	w.Metrics.Released.Add(float64(n))
	return true
}
