package process

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/pginboxtype"
)

// twoPhaseBatch runs a sql: handler over a whole claimed batch in one
// statement, webhooks.process_batch(): one round trip and one commit per
// batch instead of four round trips per event, with the same per-event
// subtransactions and fencing. The statement is bounded by
// batchStatementTimeout; when it does not go through its work rolls back
// and the policy runs the batch event by event (twoPhaseEvent).
type twoPhaseBatch struct {
	*Workers
	h *sqlHandler
}

var _ leaseStrategy = twoPhaseBatch{}

// batchOutcome is one row of webhooks.process_batch().
type batchOutcome struct {
	EventID   int64
	Outcome   string
	Error     *string
	HandlerMS float64
}

// handle runs b.events. It returns a *statementError when the statement did
// not go through (it overran batchStatementTimeout, or failed); at the
// shutdown deadline it reports the batch dealt with, left to the rescuer.
func (w twoPhaseBatch) handle(_, hctx context.Context, b *batch) (int, error) {
	ids, attempts := leases(b.events)
	ctx, cancel := context.WithTimeout(hctx, w.batchStatementTimeout())
	defer cancel()
	start := time.Now()
	rows, err := w.Pool.Query(ctx, `SELECT event_id, outcome, error, handler_ms
		FROM webhooks.process_batch($1::regprocedure, $2, $3, $4)`, w.h.signature, b.worker, ids, attempts)
	var out []batchOutcome
	if err == nil {
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[batchOutcome])
	}
	if err != nil {
		if hctx.Err() != nil {
			return len(b.events), nil // shutdown deadline: leave the batch to the rescuer
		}
		return 0, &statementError{err: fmt.Errorf("process_batch: %w", err), timedOut: ctx.Err() != nil}
	}
	if w.Tracing.Enabled() {
		end := time.Now()
		w.statementSpans(w.batchRuns(hctx, b.events, out), modeTwoPhaseBatch, start, end)
	}
	// Rows beyond the claimed events are the runs of ordered sequences the
	// statement ran behind them (under the row lock); a claimed event
	// without a row was left out by leased_events: lost before it started.
	claimed := make(map[int64]bool, len(b.events))
	for _, ev := range b.events {
		claimed[ev.ID] = true
	}
	ran := 0
	for _, o := range out {
		if claimed[o.EventID] {
			ran++
		}
	}
	w.Metrics.Claimed.Add(float64(len(out) - ran))
	lost := len(b.events) - ran
	failed := map[string]int{}
	var completed int
	for _, o := range out {
		w.Metrics.HandlerSeconds.Observe(o.HandlerMS / 1000)
		switch o.Outcome {
		case string(pginboxtype.StatusProcessed):
			completed++
		case "lost":
			lost++
		default:
			failed[o.Outcome]++
			var msg string
			if o.Error != nil {
				msg = *o.Error
			}
			b.log.Info("handler failed", "event", o.EventID, "status", o.Outcome, "error", msg)
		}
	}
	w.recordOutcomes(completed, failed, lost)
	return len(b.events), nil
}

// batchRuns pairs process_batch's outcomes with their events: the claimed
// ones, and the events of ordered runs the statement ran behind them, whose
// stored trace context is read with one more statement.
func (w twoPhaseBatch) batchRuns(ctx context.Context, events []*pginboxtype.Event, out []batchOutcome) []statementRun {
	byID := make(map[int64]*pginboxtype.Event, len(events))
	for _, ev := range events {
		byID[ev.ID] = ev
	}
	var extra []int64
	for _, o := range out {
		if _, ok := byID[o.EventID]; !ok {
			extra = append(extra, o.EventID)
		}
	}
	if len(extra) > 0 {
		for id, ev := range w.traceRows(ctx, extra) {
			byID[id] = ev
		}
	}
	runs := make([]statementRun, 0, len(out))
	for _, o := range out {
		ev, ok := byID[o.EventID]
		if !ok {
			continue
		}
		r := statementRun{ev: ev, attempt: ev.Attempt}
		if o.Outcome != string(pginboxtype.StatusProcessed) {
			r.err = o.Outcome
			if o.Error != nil {
				r.err = *o.Error
			}
		}
		runs = append(runs, r)
	}
	return runs
}
