package process

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pginbox/pginbox/internal/tracing"
	"github.com/pginbox/pginbox/pginboxtype"
)

// The lease modes a pginbox.process span names (pginbox.lease_mode).
const (
	modeRowLockSQL    = "row-lock-sql"
	modeRowLockGo     = "row-lock-go"
	modeTwoPhaseBatch = "two-phase-batch"
	modeTwoPhaseEvent = "two-phase-event"
	modeExternal      = "external"
)

// startRun starts the pginbox.process span of one handler run of ev (its
// attempt given, as the lease strategy counts it). Off: ctx and a no-op
// span.
func (w *Workers) startRun(ctx context.Context, ev *pginboxtype.Event, attempt int32, mode string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !w.Tracing.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return w.Tracing.StartProcess(ctx, tracing.Run{
		EventID: ev.ID, Attempt: attempt, Provider: ev.Provider, EventType: ev.EventType, Source: ev.Source,
		TraceParent: ev.Trace.Parent, TraceLink: ev.Trace.Link, LeaseMode: mode,
	}, opts...)
}

// statementRun is one event a batch statement ran, for its span.
type statementRun struct {
	ev      *pginboxtype.Event
	attempt int32
	// err is the handler's error ("" when it succeeded).
	err string
}

// statementSpans records, after the fact, the runs of events that one SQL
// statement ran (process_pending, process_batch): one pginbox.process span
// per event with its own parent, spanning the statement — the handler ran
// inside it, and Go cannot time one event's share.
func (w *Workers) statementSpans(runs []statementRun, mode string, start, end time.Time) {
	for _, r := range runs {
		_, span := w.startRun(context.Background(), r.ev, r.attempt, mode,
			trace.WithTimestamp(start), trace.WithAttributes(tracing.AttrBatchSize.Int(len(runs))))
		var err error
		if r.err != "" {
			err = errors.New(r.err)
		}
		tracing.EndProcess(span, err, end)
	}
}

// traceRowsSQL reads what the spans of a process_pending batch need (and
// of the ordered runs a process_batch statement ran: their attempt, counted
// by then, is the stored one). A role
// with only grant_worker's privileges may not read webhooks.events: then the
// spans are recorded without the delivery's parent (see rowLockSQL).
const traceRowsSQL = `SELECT id, provider, event_type, source, coalesce(trace_parent, ''), coalesce(trace_link, ''), attempts
	FROM webhooks.events WHERE id = ANY($1)`

// traceRows reads the events of ids for their spans; on error it returns
// bare events (ids only) and logs once.
func (w *Workers) traceRows(ctx context.Context, ids []int64) map[int64]*pginboxtype.Event {
	evs := make(map[int64]*pginboxtype.Event, len(ids))
	for _, id := range ids {
		evs[id] = &pginboxtype.Event{ID: id}
	}
	rows, err := w.Pool.Query(ctx, traceRowsSQL, ids)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var ev pginboxtype.Event
			if err = rows.Scan(&ev.ID, &ev.Provider, &ev.EventType, &ev.Source, &ev.Trace.Parent, &ev.Trace.Link, &ev.Attempt); err != nil {
				break
			}
			evs[ev.ID] = &ev
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		w.traceReadWarn.Do(func() {
			w.Log.Warn("cannot read the events' stored trace context; their pginbox.process spans start traces of their own", "error", err)
		})
	}
	return evs
}
