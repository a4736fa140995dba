package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockFallbackWindow is how long every worker of a pool uses the two-phase
// lease (claim(), then process_batch() or a transaction with a savepoint
// per event) after a row-lock batch failed as a whole. Such a failure — a cancel, a crashed backend, a lost
// connection — rolls back everything and counts no attempt; the two-phase
// path counts every attempt, so an event that kills its transaction every
// time still reaches dead instead of being retried for ever.
const lockFallbackWindow = 10 * time.Second

// errLockBatchTimedOut marks a row-lock batch that overran
// batchStatementTimeout: it rolled back whole, and the next batches are
// smaller (see lockState).
var errLockBatchTimedOut = errors.New("the row-lock batch overran its time limit")

// pendingOutcome is one row of webhooks.process_pending().
type pendingOutcome struct {
	EventID int64
	Outcome string
	Error   *string
	Attempt int32
}

// lockMode tells whether the workers run their handler with the row lock
// as the lease now: a sql: handler by default, a Go Handler only when
// GoRowLock asks for it (one failing event makes the batch run again event
// by event, so the other handlers of the batch run twice: their database
// writes are rolled back, but effects outside the database would repeat),
// never an http: one; and not while the pool is set to the two-phase lease
// or paused after a failed batch.
func (w *workerPool) lockMode() bool {
	if w.TwoPhase {
		return false
	}
	switch h := w.Handler.(type) {
	case *sqlHandler:
		if h.perEvent {
			return false
		}
	case externalHandler:
		if h.External() {
			return false
		}
		if !w.GoRowLock {
			return false
		}
	default:
		if !w.GoRowLock {
			return false
		}
	}
	return time.Now().UnixNano() >= w.lockPausedUntil.Load()
}

// pauseLockMode switches the pool to the two-phase lease for
// lockFallbackWindow.
func (w *workerPool) pauseLockMode() {
	w.lockPausedUntil.Store(time.Now().Add(w.lockFallback()).UnixNano())
}

// processPending runs one batch of a sql: handler with the row lock as the
// lease: a single statement, webhooks.process_pending(), locks up to
// limit pending events FOR UPDATE SKIP LOCKED, runs the handler on them
// and marks them processed, and commits (autocommit, a durable commit): one
// round trip, one commit and one row version per event. It returns how
// many events it dealt with, or an error when the statement did not go
// through; then nothing it did remains and the events are pending again.
func (w *workerPool) processPending(hctx context.Context, log *slog.Logger, name string, h *sqlHandler, limit int) (int, error) {
	ctx, cancel := context.WithTimeout(hctx, w.batchStatementTimeout())
	defer cancel()
	rows, err := w.Pool.Query(ctx, `SELECT event_id, outcome, error, attempt
		FROM webhooks.process_pending($1::regprocedure, $2, $3)`, h.signature, name, limit)
	var out []pendingOutcome
	if err == nil {
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[pendingOutcome])
	}
	if err != nil {
		if ctx.Err() != nil && hctx.Err() == nil {
			return 0, fmt.Errorf("process_pending: %w: %w", errLockBatchTimedOut, err)
		}
		return 0, fmt.Errorf("process_pending: %w", err)
	}
	w.Metrics.claimed.Add(float64(len(out)))
	failed := map[string]int{}
	var completed int
	for _, o := range out {
		if o.Outcome == "processed" {
			completed++
			continue
		}
		failed[o.Outcome]++
		var msg string
		if o.Error != nil {
			msg = *o.Error
		}
		log.Info("handler failed", "event", o.EventID, "attempt", o.Attempt, "status", o.Outcome, "error", msg)
	}
	w.recordOutcomes(completed, failed, 0)
	return len(out), nil
}

// lockState is the part of workerPool the row-lock mode needs.
//
// Under the row lock a whole batch shares one time limit
// (batchStatementTimeout), so handlers that are slow but healthy — a
// second each, a hundred to a batch — would overrun every batch, roll it
// back, and after each fallback window start over. The pool adapts
// instead: a batch that overruns halves the size of the next row-lock
// batches (lockLimit), down to one event, so after a few overruns the
// batches fit in the limit. Any batch that fails as a whole, an overrun
// included, also sends the pool to the two-phase lease for
// lockFallbackWindow, where attempts count, so a hung or poison event is
// still failed alone and backed off. A full batch that took under a
// quarter of the limit doubles the size again, up to BatchSize.
type lockState struct {
	// lockPausedUntil (unix ns) is when the workers may use the row lock as
	// the lease again after a failed process_pending statement.
	lockPausedUntil atomic.Int64
	// lockLimit is the size of the next row-lock batch; 0 means BatchSize.
	lockLimit atomic.Int64
	// fallbackWindow overrides lockFallbackWindow when set (tests).
	fallbackWindow time.Duration
}

// lockBatch is the size of the next row-lock batch.
func (w *workerPool) lockBatch() int {
	return w.effectiveLockBatch(w.lockLimit.Load())
}

// effectiveLockBatch is the batch size a lockLimit value stands for.
func (w *workerPool) effectiveLockBatch(v int64) int {
	if n := int(v); n > 0 && n < w.BatchSize {
		return n
	}
	return w.BatchSize
}

// lockBatchDone adapts the row-lock batch size after a batch of limit
// events that dealt with n of them in took: halved after it overran its
// time limit, doubled after a full batch that took under a quarter of it.
func (w *workerPool) lockBatchDone(limit, n int, took time.Duration, err error) {
	next := limit
	switch {
	case errors.Is(err, errLockBatchTimedOut):
		next = max(limit/2, 1)
	case err == nil && n == limit && limit < w.BatchSize && took < w.batchStatementTimeout()/4:
		next = min(2*limit, w.BatchSize)
	}
	// Only from the size this batch had: workers that overran together
	// halve it once, not once each.
	cur := w.lockLimit.Load()
	if next != limit && w.effectiveLockBatch(cur) == limit {
		w.lockLimit.CompareAndSwap(cur, int64(next))
	}
}

// lockFallback is how long the pool uses the two-phase lease after a
// row-lock batch failed as a whole.
func (w *workerPool) lockFallback() time.Duration {
	if w.fallbackWindow > 0 {
		return w.fallbackWindow
	}
	return lockFallbackWindow
}

// lockSQL locks a batch for a Go Handler in the open transaction, and bounds
// how long the transaction may then sit idle (a handler hung in Go): past
// it the server ends the session, the transaction rolls back and the
// events are pending again.
// The Event's LockedUntil is when the batch times out: the row lock lasts
// no longer.
const lockSQL = `SELECT id, provider, external_id, event_type, payload, source, received_at, attempts, max_attempts,
	       now() + $3::text::interval AS locked_until
	FROM webhooks._lock_pending($1, $2)
	WHERE set_config('idle_in_transaction_session_timeout', $3::text, true) IS NOT NULL`

// processPendingGo runs one batch of a Go Handler with the row lock as the
// lease, in one transaction: lock up to BatchSize pending events FOR UPDATE
// SKIP LOCKED, run the handler on each inside one savepoint, mark them all
// processed with one statement, commit — no claim to commit first, one row
// version per event, and a fixed handful of round trips per batch. When a
// handler fails, the savepoint rolls back and the batch runs again event by
// event, each in a savepoint of its own: a failing event is recorded with
// _fail_pending() (its attempt counted, retried with backoff, dead at
// max_attempts) and the others commit. The whole batch is bounded by
// batchStatementTimeout. It returns how many events it dealt with, or an
// error when the transaction did not commit; then nothing it did remains.
func (w *workerPool) processPendingGo(hctx context.Context, log *slog.Logger, name string, size int) (int, error) {
	limit := w.batchStatementTimeout()
	// A handler deaf to its context would hold the worker (and its batch's
	// row locks) for good: past the limit and a grace second the worker
	// abandons the batch to its goroutine and goes on; the server ends that
	// session once it has sat idle in its transaction as long (lockSQL), so
	// the events are pending again, and the caller's fallback to the
	// two-phase lease counts the next attempts.
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := w.processPendingGoTx(hctx, log, name, size, limit)
		done <- result{n, err}
	}()
	grace := time.NewTimer(limit + time.Second)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-grace.C:
		err := fmt.Errorf("a handler overran %s and ignores its context: its batch is abandoned and rolls back", limit)
		if hctx.Err() == nil {
			err = fmt.Errorf("%w: %w", errLockBatchTimedOut, err)
		}
		return 0, err
	}
}

// processPendingGoTx is processPendingGo's transaction. An error from a
// transaction that ran out of its time limit — in any statement, handler
// or commit — carries errLockBatchTimedOut.
func (w *workerPool) processPendingGoTx(hctx context.Context, log *slog.Logger, name string, size int, limit time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(hctx, limit)
	defer cancel()
	n, err := w.lockedGoBatch(ctx, log, name, size, limit)
	if err != nil && ctx.Err() != nil && hctx.Err() == nil && !errors.Is(err, errLockBatchTimedOut) {
		err = fmt.Errorf("%w: %w", errLockBatchTimedOut, err)
	}
	return n, err
}

// lockedGoBatch locks, runs and commits one Go-handler batch under ctx.
func (w *workerPool) lockedGoBatch(ctx context.Context, log *slog.Logger, name string, size int, limit time.Duration) (int, error) {
	tx, err := w.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	rows, err := tx.Query(ctx, lockSQL, name, size, fmt.Sprintf("%dms", limit.Milliseconds()+1000))
	if err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	batch, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	if len(batch) == 0 {
		return 0, tx.Commit(ctx)
	}
	w.Metrics.claimed.Add(float64(len(batch)))
	ids, _ := leases(batch)
	failed := map[string]int{}
	completed, err := w.runLockedBatch(ctx, tx, batch, ids)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("batch: %w", err)
		}
		// A handler failed: event by event, each in a savepoint.
		completed = 0
		for _, ev := range batch {
			status, err := w.runLockedOne(ctx, tx, ev)
			if err != nil {
				return 0, err
			}
			if status == "processed" {
				completed++
				continue
			}
			failed[status]++
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	for status, n := range failed {
		log.Info("handlers failed", "status", status, "events", n)
	}
	w.recordOutcomes(completed, failed, 0)
	return len(batch), nil
}

// runLockedBatch runs the handler on every event inside one savepoint and
// marks them all processed; any handler error rolls the savepoint back.
func (w *workerPool) runLockedBatch(ctx context.Context, tx pgx.Tx, batch []*Event, ids []int64) (int, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("savepoint: %w", err)
	}
	for _, ev := range batch {
		if err := ctx.Err(); err != nil { // out of time: no handler starts after the limit
			_ = sp.Rollback(context.Background())
			return 0, err
		}
		if err := w.safeHandle(ctx, sp, ev); err != nil {
			_ = sp.Rollback(ctx)
			return 0, err
		}
	}
	var n int
	if err := sp.QueryRow(ctx, `SELECT webhooks._mark_processed($1)`, ids).Scan(&n); err != nil {
		_ = sp.Rollback(ctx)
		return 0, fmt.Errorf("mark processed: %w", err)
	}
	if n != len(batch) {
		_ = sp.Rollback(ctx)
		return 0, fmt.Errorf("mark processed: %d of %d locked events", n, len(batch))
	}
	if err := sp.Commit(ctx); err != nil {
		return 0, fmt.Errorf("release savepoint: %w", err)
	}
	return n, nil
}

// runLockedOne runs one locked event in a savepoint of its own and returns
// its new status: processed, or pending/dead after _fail_pending(). An
// error means the transaction itself is broken.
func (w *workerPool) runLockedOne(ctx context.Context, tx pgx.Tx, ev *Event) (string, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("savepoint: %w", err)
	}
	herr := w.safeHandle(ctx, sp, ev)
	if herr == nil {
		var n int
		herr = sp.QueryRow(ctx, `SELECT webhooks._mark_processed($1)`, []int64{ev.ID}).Scan(&n)
		if herr == nil && n == 1 {
			if err := sp.Commit(ctx); err != nil {
				return "", fmt.Errorf("release savepoint: %w", err)
			}
			return "processed", nil
		}
		if herr == nil {
			herr = fmt.Errorf("mark processed: event %d is no longer pending", ev.ID)
		}
	}
	if err := sp.Rollback(ctx); err != nil {
		return "", fmt.Errorf("rollback to savepoint: %w", err)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var status *string
	if err := tx.QueryRow(ctx, `SELECT webhooks._fail_pending($1, $2)`, ev.ID, herr.Error()).Scan(&status); err != nil {
		return "", fmt.Errorf("fail: %w", err)
	}
	if status == nil {
		return "", fmt.Errorf("fail: event %d is no longer pending", ev.ID)
	}
	w.Log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", *status, "error", herr)
	return *status, nil
}
