package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockFallbackWindow is how long every worker of a pool uses the two-phase
// lease (claim(), then process_batch()) after a process_pending statement
// failed as a whole. Such a failure — a cancel, a crashed backend, a lost
// connection — rolls back everything and counts no attempt; the two-phase
// path counts every attempt, so an event that kills its transaction every
// time still reaches dead instead of being retried for ever.
const lockFallbackWindow = 10 * time.Second

// pendingOutcome is one row of webhooks.process_pending().
type pendingOutcome struct {
	EventID int64
	Outcome string
	Error   *string
	Attempt int32
}

// lockMode tells whether the workers run a sql: handler with the row lock
// as the lease now.
func (w *workerPool) lockMode() bool {
	h, ok := w.Handler.(*sqlHandler)
	if !ok || h.perEvent || w.TwoPhase {
		return false
	}
	return time.Now().UnixNano() >= w.lockPausedUntil.Load()
}

// pauseLockMode switches the pool to the two-phase lease for
// lockFallbackWindow.
func (w *workerPool) pauseLockMode() {
	w.lockPausedUntil.Store(time.Now().Add(lockFallbackWindow).UnixNano())
}

// processPending runs one batch of a sql: handler with the row lock as the
// lease: a single statement, webhooks.process_pending(), locks up to
// BatchSize pending events FOR UPDATE SKIP LOCKED, runs the handler on them
// and marks them processed, and commits (autocommit, a durable commit): one
// round trip, one commit and one row version per event. It returns how
// many events it dealt with, or an error when the statement did not go
// through; then nothing it did remains and the events are pending again.
func (w *workerPool) processPending(hctx context.Context, log *slog.Logger, name string, h *sqlHandler) (int, error) {
	ctx, cancel := context.WithTimeout(hctx, w.batchStatementTimeout())
	defer cancel()
	rows, err := w.Pool.Query(ctx, `SELECT event_id, outcome, error, attempt
		FROM webhooks.process_pending($1::regprocedure, $2, $3)`, h.signature, name, w.BatchSize)
	var out []pendingOutcome
	if err == nil {
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[pendingOutcome])
	}
	if err != nil {
		return 0, fmt.Errorf("process_pending: %w (timed out: %t)", err, ctx.Err() != nil)
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
type lockState struct {
	// lockPausedUntil (unix ns) is when the workers may use the row lock as
	// the lease again after a failed process_pending statement.
	lockPausedUntil atomic.Int64
}
