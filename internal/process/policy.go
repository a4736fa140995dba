package process

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/pginbox/pginbox/pginboxtype"
)

// The policy: which lease strategy runs the next batch, and what happens
// when one fails. It is all in this file.
//
//   - A sql: handler runs under the row lock (rowLockSQL) unless the lease
//     mode is two-phase; a Go Handler keeps the two-phase lease unless the
//     lease mode is row-lock (rowLockGo): under the row lock one failing
//     event makes its batch run again event by event, so the other handlers
//     of the batch run twice — their database writes roll back, but effects
//     outside the database would repeat. An http: handler always takes the
//     two-phase lease (external).
//   - A row-lock batch that fails as a whole (a timeout, a crashed backend,
//     a lost connection) rolls back without counting attempts: every worker
//     of the pool then takes the two-phase lease for lockFallbackWindow,
//     which counts them, so an event that kills its transaction every time
//     still reaches dead instead of being retried for ever.
//   - A row-lock batch that overran its time limit halves the size of the
//     next row-lock batches, down to one event; a full batch that took
//     under a quarter of the limit doubles it again, up to BatchSize
//     (lockState).
//   - Claimed events of a sql: handler run in one process_batch statement
//     (twoPhaseBatch); when it overruns or fails they run again event by
//     event (twoPhaseEvent), where one slow or failing event is timed out
//     and failed alone.

// strategies are the lease strategies one handler can use.
type strategies struct {
	// rowLock takes and runs a batch under the row lock; nil when this
	// handler never runs under it.
	rowLock leaseStrategy
	// batchStatement runs a claimed batch in one statement; nil when this
	// handler has none.
	batchStatement leaseStrategy
	// claimed runs a claimed batch event by event.
	claimed leaseStrategy
}

// strategiesFor picks the strategies for handler h under w.LeaseMode.
func (w *Workers) strategiesFor(h pginboxtype.Handler) strategies {
	var s strategies
	s.claimed = twoPhaseEvent{w}
	ext, isExternal := h.(externalHandler)
	isExternal = isExternal && ext.External()
	if isExternal {
		s.claimed = external{w}
	}
	sh, isSQL := h.(*sqlHandler)
	if isSQL && !sh.perEvent {
		s.batchStatement = twoPhaseBatch{w, sh}
	}
	switch {
	case w.LeaseMode == "two-phase":
	case isSQL:
		if !sh.perEvent {
			s.rowLock = rowLockSQL{w, sh}
		}
	case isExternal:
	case w.LeaseMode == "row-lock":
		s.rowLock = rowLockGo{w}
	}
	return s
}

// rowLockNow returns the row-lock strategy when the workers use the row
// lock as the lease now: never for some handlers, and not while the pool is
// paused after a failed row-lock batch.
func (w *Workers) rowLockNow() leaseStrategy {
	if w.rowLock == nil || time.Now().UnixNano() < w.lockPausedUntil.Load() {
		return nil
	}
	return w.rowLock
}

// runRowLock runs one row-lock batch, adapts the size of the next ones
// and, when it failed as a whole, sends the pool to the two-phase lease for
// a while. It returns how many events the batch dealt with out of limit.
func (w *Workers) runRowLock(hctx context.Context, log *slog.Logger, name string, lease leaseStrategy) (n, limit int, err error) {
	limit, start := w.lockBatch(), time.Now()
	n, err = lease.handle(hctx, hctx, &batch{worker: name, log: log, limit: limit})
	w.lockBatchDone(limit, n, time.Since(start), err)
	if err != nil && hctx.Err() == nil {
		// Rolled back without counting attempts: the next batches take the
		// two-phase lease, which counts them (and, after an overrun, the
		// row-lock batches that follow are half as large).
		log.Warn("a row-lock batch did not complete; using the two-phase lease for a while",
			"events", limit, "next_row_lock_batch", w.lockBatch(), "error", err, "for", w.lockFallback())
		w.Metrics.BatchFallbacks.Inc()
		w.pauseLockMode()
	}
	return n, limit, err
}

// runClaimed runs one claimed batch: in one statement when the handler has
// one, else (or when that statement did not go through) event by event
// under heartbeats; events it did not start are released. It returns false
// when some of the batch's leases may still be the worker's (an outcome or
// a release that did not go through).
func (w *Workers) runClaimed(ctx, hctx context.Context, log *slog.Logger, name string, events []*pginboxtype.Event) bool {
	b := &batch{worker: name, log: log, events: events, st: &batchState{}}
	if w.batchStatement != nil && ctx.Err() == nil {
		_, err := w.batchStatement.handle(ctx, hctx, b)
		if err == nil {
			return true
		}
		var se *statementError
		log.Warn("process_batch did not complete; running the batch event by event", "events", len(events),
			"error", err, "timed_out", errors.As(err, &se) && se.timedOut)
		w.Metrics.BatchFallbacks.Inc()
	}
	hbCtx, stopHB := context.WithCancel(hctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(hbCtx, log, name, events, b.st)
	}()
	done, _ := w.claimed.handle(ctx, hctx, b)
	stopHB()
	<-hbDone
	if done < len(events) && !w.release(log, name, events[done:]) {
		return false
	}
	return !b.leftLeases
}

// lockFallbackWindow is how long every worker of a pool uses the two-phase
// lease (claim(), then process_batch() or a transaction with a savepoint
// per event) after a row-lock batch failed as a whole.
const lockFallbackWindow = 10 * time.Second

// errLockBatchTimedOut marks a row-lock batch that overran
// batchStatementTimeout: it rolled back whole, and the next batches are
// smaller (see lockState).
var errLockBatchTimedOut = errors.New("the row-lock batch overran its time limit")

// batchStatementTimeout bounds one batch under the row lock or one
// process_batch statement: the handler timeout, and at most half the lease,
// so no lease of a claimed batch can expire while the statement holds it
// (heartbeats would block behind the batch's own row locks until it
// commits).
func (w *Workers) batchStatementTimeout() time.Duration {
	d := w.Lease / 2
	if w.HandlerTimeout > 0 && w.HandlerTimeout < d {
		d = w.HandlerTimeout
	}
	return d
}

// lockState is the part of Workers the row-lock mode needs.
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
	// the lease again after a failed row-lock batch.
	lockPausedUntil atomic.Int64
	// lockLimit is the size of the next row-lock batch; 0 means BatchSize.
	lockLimit atomic.Int64
	// fallbackWindow overrides lockFallbackWindow when set (tests).
	fallbackWindow time.Duration
}

// pauseLockMode switches the pool to the two-phase lease for
// lockFallbackWindow.
func (w *Workers) pauseLockMode() {
	w.lockPausedUntil.Store(time.Now().Add(w.lockFallback()).UnixNano())
}

// lockBatch is the size of the next row-lock batch.
func (w *Workers) lockBatch() int {
	return w.effectiveLockBatch(w.lockLimit.Load())
}

// effectiveLockBatch is the batch size a lockLimit value stands for.
func (w *Workers) effectiveLockBatch(v int64) int {
	if n := int(v); n > 0 && n < w.BatchSize {
		return n
	}
	return w.BatchSize
}

// lockBatchDone adapts the row-lock batch size after a batch of limit
// events that dealt with n of them in took: halved after it overran its
// time limit, doubled after a full batch that took under a quarter of it.
func (w *Workers) lockBatchDone(limit, n int, took time.Duration, err error) {
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
func (w *Workers) lockFallback() time.Duration {
	if w.fallbackWindow > 0 {
		return w.fallbackWindow
	}
	return lockFallbackWindow
}
