package runner

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// batchOutcome is one row of webhooks.process_batch().
type batchOutcome struct {
	EventID   int64
	Outcome   string
	Error     *string
	HandlerMS float64
}

// batchStatementTimeout bounds one process_batch statement: the handler
// timeout, and at most half the lease, so no lease of the batch can expire
// while the statement holds it (heartbeats would block behind the batch's
// own row locks until it commits).
func (w *workerPool) batchStatementTimeout() time.Duration {
	d := w.Lease / 2
	if w.HandlerTimeout > 0 && w.HandlerTimeout < d {
		d = w.HandlerTimeout
	}
	return d
}

// processBatchStatement runs a sql: handler over the whole batch in one
// statement, webhooks.process_batch(): one round trip and one commit per
// batch instead of four round trips per event, with the same per-event
// subtransactions and fencing. It reports false when the statement did not
// go through (it overran batchStatementTimeout, or failed): its work rolled
// back, and the caller then runs the batch event by event, where one slow
// or failing event is timed out and failed alone.
func (w *workerPool) processBatchStatement(hctx context.Context, log *slog.Logger, name string, h *sqlHandler, batch []*Event) bool {
	ids, attempts := leases(batch)
	ctx, cancel := context.WithTimeout(hctx, w.batchStatementTimeout())
	defer cancel()
	rows, err := w.Pool.Query(ctx, `SELECT event_id, outcome, error, handler_ms
		FROM webhooks.process_batch($1::regprocedure, $2, $3, $4)`, h.signature, name, ids, attempts)
	var out []batchOutcome
	if err == nil {
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[batchOutcome])
	}
	if err != nil {
		if hctx.Err() != nil {
			return true // shutdown deadline: leave the batch to the rescuer
		}
		log.Warn("process_batch did not complete; running the batch event by event", "events", len(batch),
			"error", fmt.Errorf("process_batch: %w", err), "timed_out", ctx.Err() != nil)
		w.Metrics.batchFallbacks.Inc()
		return false
	}
	lost := len(batch) - len(out) // left out by leased_events: lost before they started
	failed := map[string]int{}
	var completed int
	for _, o := range out {
		w.Metrics.handlerSeconds.Observe(o.HandlerMS / 1000)
		switch o.Outcome {
		case "processed":
			completed++
		case "lost":
			lost++
		default:
			failed[o.Outcome]++
			var msg string
			if o.Error != nil {
				msg = *o.Error
			}
			log.Info("handler failed", "event", o.EventID, "status", o.Outcome, "error", msg)
		}
	}
	w.recordOutcomes(completed, failed, lost)
	return true
}
