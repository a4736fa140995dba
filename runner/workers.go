package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// workerPool runs a Handler on pending events.
//
// A handler that runs inside the database transaction (sql:, or a Go
// Handler) runs with the row lock as the lease by default: a batch is
// locked FOR UPDATE SKIP LOCKED, handled and marked processed in the
// worker's own transaction — one row version per event, nothing to rescue
// if the worker dies. A sql: handler does that in one statement,
// webhooks.process_pending(). When a batch fails as a whole (a timeout, a
// crashed backend) the pool uses the two-phase lease below for
// lockFallbackWindow, so every attempt is counted and a poison event still
// reaches dead; after a timeout the next row-lock batches are also half as
// large (lockState).
//
// The two-phase lease: claim events with webhooks.claim(), then run the
// Handler on each.
//
// A database handler (sql:, or a Go Handler) runs a whole claimed batch in
// one transaction with a savepoint per event: each event's writes and its
// complete() commit together, an event whose handler fails or whose lease
// was lost rolls back to its savepoint alone, and the batch commits once —
// exactly-once effects at batch speed. A sql: handler does all of that in
// one statement, webhooks.process_batch() (one round trip per batch), and
// falls back to the event-by-event transaction when that statement overruns
// or fails. An externalHandler (http:) runs each event outside any
// transaction and completes it right after it succeeded.
type workerPool struct {
	Pool    *pgxpool.Pool
	Handler Handler
	// N is the number of worker goroutines; BatchSize how many events each
	// claims at once.
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
	// lease expires — and its own completion is then refused.
	HandlerTimeout time.Duration
	// TwoPhase runs every handler with the two-phase lease (claim(), then
	// the handler under a heartbeated lease, then complete()) instead of the
	// row lock as the lease; http: handlers always use it.
	TwoPhase bool
	// GoRowLock runs a Go Handler with the row lock as the lease too (a
	// sql: handler uses it unless TwoPhase).
	GoRowLock bool
	// Name prefixes the worker names (locked_by).
	Name    string
	Metrics *metrics
	Log     *slog.Logger

	wake chan struct{}
	once sync.Once
	lockState
}

func (w *workerPool) init() {
	w.once.Do(func() { w.wake = make(chan struct{}, 1) })
}

// Wake tells an idle worker to look for work now. It never blocks; many
// wake-ups coalesce.
func (w *workerPool) Wake(source string) {
	w.init()
	select {
	case w.wake <- struct{}{}:
		w.Metrics.wakeups.WithLabelValues(source).Inc()
	default:
	}
}

// Run starts the workers and returns when all have stopped: after ctx ends
// they stop claiming, finish (within ShutdownTimeout) the event in hand and
// release the rest of their batch.
func (w *workerPool) Run(ctx context.Context) {
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

func (w *workerPool) loop(ctx, hctx context.Context, name string) {
	log := w.Log.With("worker", name)
	poll := time.NewTimer(0)
	defer poll.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-poll.C:
			w.Metrics.wakeups.WithLabelValues("poll").Inc()
		}
		for ctx.Err() == nil {
			if w.lockMode() {
				var n int
				var err error
				limit, start := w.lockBatch(), time.Now()
				if h, ok := w.Handler.(*sqlHandler); ok {
					n, err = w.processPending(hctx, log, name, h, limit)
				} else {
					n, err = w.processPendingGo(hctx, log, name, limit)
				}
				w.lockBatchDone(limit, n, time.Since(start), err)
				if err == nil {
					backoff = 0
					if n == limit {
						w.Wake("cascade")
						continue
					}
					break
				}
				if hctx.Err() != nil {
					return // shutdown deadline: the statement rolled back, the events are pending
				}
				// Rolled back without counting attempts: the next batches
				// take the two-phase lease, which counts them (and, after an
				// overrun, the row-lock batches that follow are half as large).
				log.Warn("a row-lock batch did not complete; using the two-phase lease for a while",
					"events", limit, "next_row_lock_batch", w.lockBatch(), "error", err, "for", w.lockFallback())
				w.Metrics.batchFallbacks.Inc()
				w.pauseLockMode()
			}
			batch, err := w.claim(ctx, name)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
				log.Warn("claim failed; retrying", "error", err, "in", backoff)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
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
			w.process(ctx, hctx, log, name, batch)
			if len(batch) < w.BatchSize {
				break
			}
		}
		poll.Reset(w.PollInterval)
	}
}

// claimSQL claims a batch in a transaction of its own (one statement) that
// commits without waiting for its WAL flush (set_config(..., true) is local
// to the statement's own transaction). That is safe: a claim lost in a
// crash only means the lease was never taken — the event is still pending —
// and any completion that does commit is flushed with everything before it
// in the WAL, the claim included. It takes one flush off every wake-up.
const claimSQL = `SELECT ` + claimColumns + ` FROM webhooks.claim($1, $2, $3::interval)
	WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL ORDER BY run_after, id`

// claim takes a batch.
func (w *workerPool) claim(ctx context.Context, name string) ([]*Event, error) {
	rows, err := w.Pool.Query(ctx, claimSQL, name, w.BatchSize, w.Lease.String())
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	w.Metrics.claimed.Add(float64(len(events)))
	return events, nil
}

// scanEvent reads one row of claimColumns.
func scanEvent(row pgx.CollectableRow) (*Event, error) {
	var ev Event
	var payload []byte
	err := row.Scan(&ev.ID, &ev.Provider, &ev.ExternalID, &ev.EventType, &payload, &ev.Source,
		&ev.ReceivedAt, &ev.Attempt, &ev.MaxAttempts, &ev.LockedUntil)
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

// process runs one claimed batch, heartbeating the unfinished events.
func (w *workerPool) process(ctx, hctx context.Context, log *slog.Logger, name string, batch []*Event) {
	if h, ok := w.Handler.(*sqlHandler); ok && !h.perEvent && ctx.Err() == nil {
		if w.processBatchStatement(hctx, log, name, h, batch) {
			return
		}
	}
	st := &batchState{}
	hbCtx, stopHB := context.WithCancel(hctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(hbCtx, log, name, batch, st)
	}()
	var done int
	if ext, ok := w.Handler.(externalHandler); ok && ext.External() {
		done = w.processExternal(ctx, hctx, log, name, batch, st)
	} else {
		done = w.processInTx(ctx, hctx, log, name, batch, st)
	}
	stopHB()
	<-hbDone
	if done < len(batch) {
		w.release(log, name, batch[done:])
	}
}

// processInTx runs the batch in one transaction, a savepoint per event. It
// returns how many events it dealt with (the rest are released).
func (w *workerPool) processInTx(ctx, hctx context.Context, log *slog.Logger, name string, batch []*Event, st *batchState) int {
	tx, err := w.Pool.Begin(hctx)
	if err != nil {
		log.Warn("begin failed; the batch's leases will expire and be rescued", "error", err)
		return len(batch)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	var completed, lost int
	failed := map[string]int{}
	i := 0
	for ; i < len(batch); i++ {
		if ctx.Err() != nil {
			break // shutting down: hand the rest back
		}
		ev := batch[i]
		st.start(i)
		if err := w.runOne(hctx, tx, ev, name); err != nil {
			if hctx.Err() != nil {
				return len(batch) // shutdown deadline: leave the batch to the rescuer
			}
			status, ferr := failInTx(hctx, tx, ev, name, err)
			if ferr != nil {
				log.Warn("fail() failed; the batch rolls back and its leases will be rescued", "event", ev.ID, "error", ferr)
				return len(batch)
			}
			if status == "" {
				lost++
			} else {
				failed[status]++
				log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", status, "error", err)
			}
			continue
		}
		completed++
	}
	if err := tx.Commit(hctx); err != nil {
		log.Warn("batch commit failed; its events will be rescued and run again (their writes rolled back)", "error", err, "events", i)
		return len(batch)
	}
	w.recordOutcomes(completed, failed, lost)
	return i
}

// recordOutcomes counts a committed batch in the metrics: completed events,
// failures by their new status, and completions refused by the fence.
func (w *workerPool) recordOutcomes(completed int, failed map[string]int, lost int) {
	w.Metrics.completed.Add(float64(completed))
	for status, n := range failed {
		w.Metrics.failed.WithLabelValues(status).Add(float64(n))
	}
	w.Metrics.lostLeases.Add(float64(lost))
}

// leases returns the (id, attempt) pairs that fence a batch's events, as
// the parallel arrays the SQL functions take.
func leases(events []*Event) (ids []int64, attempts []int32) {
	ids = make([]int64, len(events))
	attempts = make([]int32, len(events))
	for i, ev := range events {
		ids[i], attempts[i] = ev.ID, ev.Attempt
	}
	return ids, attempts
}

// errLeaseLost marks a completion refused by the fence.
var errLeaseLost = errors.New("lease lost")

// runOne runs the handler and complete() inside a savepoint of tx.
func (w *workerPool) runOne(ctx context.Context, tx pgx.Tx, ev *Event, name string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := w.safeHandle(ctx, sp, ev); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	if ctx.Err() != nil {
		_ = sp.Rollback(ctx)
		return ctx.Err()
	}
	var ok bool
	if err := sp.QueryRow(ctx, `SELECT webhooks.complete($1, $2, $3)`, ev.ID, name, ev.Attempt).Scan(&ok); err != nil {
		_ = sp.Rollback(ctx)
		return fmt.Errorf("complete: %w", err)
	}
	if !ok {
		_ = sp.Rollback(ctx)
		return errLeaseLost
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// failInTx records the failure (fenced). It returns the new status, or ""
// when the lease was lost.
func failInTx(ctx context.Context, tx pgx.Tx, ev *Event, name string, cause error) (string, error) {
	if errors.Is(cause, errLeaseLost) {
		return "", nil
	}
	var status *string
	if err := tx.QueryRow(ctx, `SELECT webhooks.fail($1, $2, $3, $4)`, ev.ID, name, ev.Attempt, cause.Error()).Scan(&status); err != nil {
		return "", fmt.Errorf("fail: %w", err)
	}
	if status == nil {
		return "", nil
	}
	return *status, nil
}

// processExternal runs each event outside a transaction (its effects are
// not in the database) and completes or fails it right away.
func (w *workerPool) processExternal(ctx, hctx context.Context, log *slog.Logger, name string, batch []*Event, st *batchState) int {
	for i, ev := range batch {
		if ctx.Err() != nil {
			return i
		}
		st.start(i)
		herr := w.safeHandle(hctx, nil, ev)
		if herr != nil && hctx.Err() != nil {
			return len(batch)
		}
		var status *string
		var err error
		if herr == nil {
			var ok bool
			err = w.Pool.QueryRow(hctx, `SELECT webhooks.complete($1, $2, $3)`, ev.ID, name, ev.Attempt).Scan(&ok)
			switch {
			case err != nil:
			case ok:
				w.Metrics.completed.Inc()
			default:
				w.Metrics.lostLeases.Inc()
			}
		} else {
			err = w.Pool.QueryRow(hctx, `SELECT webhooks.fail($1, $2, $3, $4)`, ev.ID, name, ev.Attempt, herr.Error()).Scan(&status)
			if err == nil && status != nil {
				w.Metrics.failed.WithLabelValues(*status).Inc()
				log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", *status, "error", herr)
			} else if err == nil {
				w.Metrics.lostLeases.Inc()
			}
		}
		if err != nil {
			log.Warn("recording the outcome failed; the lease will expire and the event run again", "event", ev.ID, "error", err)
		}
	}
	return len(batch)
}

// safeHandle runs the handler under HandlerTimeout, turning a panic into
// an error.
func (w *workerPool) safeHandle(ctx context.Context, tx pgx.Tx, ev *Event) (err error) {
	start := time.Now()
	if w.HandlerTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.HandlerTimeout)
		defer cancel()
	}
	defer func() {
		w.Metrics.handlerSeconds.Observe(time.Since(start).Seconds())
		if r := recover(); r != nil {
			w.Metrics.handlerPanics.Inc()
			w.Log.Error("handler panicked", "event", ev.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return w.Handler.Handle(ctx, tx, ev)
}

// heartbeat extends the leases of the batch's unfinished events every
// Lease/3 until ctx ends, and stops for good once the current handler has
// overrun HandlerTimeout: a hung handler must not hold its batch forever.
func (w *workerPool) heartbeat(ctx context.Context, log *slog.Logger, name string, batch []*Event, st *batchState) {
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
		err := w.Pool.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE webhooks.heartbeat(x.id, $3, x.attempt, $4::interval))
			FROM unnest($1::bigint[], $2::int[]) AS x(id, attempt)`,
			ids, attempts, name, w.Lease.String()).Scan(&kept)
		if err != nil && ctx.Err() == nil {
			log.Warn("heartbeat failed", "error", err)
		} else if err == nil && kept < len(rest) {
			// Either lost, or completed in the open batch transaction a moment ago.
			log.Debug("heartbeat did not extend every lease", "not_extended", len(rest)-kept)
		}
	}
}

// release hands unstarted events back for others to run now.
func (w *workerPool) release(log *slog.Logger, name string, rest []*Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, attempts := leases(rest)
	var n int
	err := w.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE webhooks.release(x.id, $3, x.attempt))
		FROM unnest($1::bigint[], $2::int[]) AS x(id, attempt)`, ids, attempts, name).Scan(&n)
	if err != nil {
		log.Warn("release failed; the leases will expire and be rescued", "events", len(rest), "error", err)
		return
	}
	w.Metrics.released.Add(float64(n))
}
