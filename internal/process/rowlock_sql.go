package process

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/pginboxtype"
)

// rowLockSQL runs a sql: handler with the row lock as the lease: a single
// statement, webhooks.process_pending(), locks up to limit pending events
// FOR UPDATE SKIP LOCKED, runs the handler on them and marks them
// processed, and commits (autocommit, a durable commit): one round trip,
// one commit and one row version per event. It is the default for sql:
// handlers.
type rowLockSQL struct {
	*Workers
	h *sqlHandler
}

var _ leaseStrategy = rowLockSQL{}

// pendingOutcome is one row of webhooks.process_pending().
type pendingOutcome struct {
	EventID int64
	Outcome string
	Error   *string
	Attempt int32
}

// handle runs one batch. It returns how many events it dealt with, or an
// error when the statement did not go through; then nothing it did remains
// and the events are pending again.
func (w rowLockSQL) handle(_, hctx context.Context, b *batch) (int, error) {
	ctx, cancel := context.WithTimeout(hctx, w.batchStatementTimeout())
	defer cancel()
	start := time.Now()
	rows, err := w.Pool.Query(ctx, `SELECT event_id, outcome, error, attempt
		FROM webhooks.process_pending($1::regprocedure, $2, $3)`, w.h.signature, b.worker, b.limit)
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
	if w.Tracing.Enabled() && len(out) > 0 {
		end := time.Now()
		w.statementSpans(w.pendingRuns(hctx, out), modeRowLockSQL, start, end)
	}
	w.Metrics.Claimed.Add(float64(len(out)))
	failed := map[string]int{}
	var completed int
	for _, o := range out {
		if o.Outcome == string(pginboxtype.StatusProcessed) {
			completed++
			continue
		}
		failed[o.Outcome]++
		var msg string
		if o.Error != nil {
			msg = *o.Error
		}
		b.log.Info("handler failed", "event", o.EventID, "attempt", o.Attempt, "status", o.Outcome, "error", msg)
	}
	w.recordOutcomes(completed, failed, 0)
	return len(out), nil
}

// pendingRuns pairs process_pending's outcomes with the events' stored
// trace context, read with one more statement (only when tracing is on).
func (w rowLockSQL) pendingRuns(ctx context.Context, out []pendingOutcome) []statementRun {
	ids := make([]int64, len(out))
	for i, o := range out {
		ids[i] = o.EventID
	}
	evs := w.traceRows(ctx, ids)
	runs := make([]statementRun, len(out))
	for i, o := range out {
		runs[i] = statementRun{ev: evs[o.EventID], attempt: o.Attempt}
		if o.Outcome != string(pginboxtype.StatusProcessed) {
			runs[i].err = o.Outcome
			if o.Error != nil {
				runs[i].err = *o.Error
			}
		}
	}
	return runs
}
