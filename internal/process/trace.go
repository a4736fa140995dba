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
// by then, is the stored one), from the queue, where the statement found
// those events: one probe of its primary key per id. A role with only
// grant_worker's privileges may not read the queue: then the spans are
// recorded without the delivery's parent (see rowLockSQL).
const traceRowsSQL = `SELECT id, provider, event_type, source, coalesce(trace_parent, ''), coalesce(trace_link, ''), attempts
	FROM webhooks.inbox WHERE id = ANY($1)`

// traceMovedSQL reads the same for the ids traceRowsSQL did not find:
// processed events move_history() moved into history in between. Nothing
// tells their day, so it probes the id index of every day slice once; it
// runs only when the mover ran between the statement and the read.
const traceMovedSQL = `SELECT id, provider, event_type, source, coalesce(trace_parent, ''), coalesce(trace_link, ''), attempts
	FROM webhooks.history WHERE id = ANY($1)`

// traceRows reads the events of ids for their spans, from the queue and
// then, for those no longer there, from history; on error it returns bare
// events (ids only) and logs once.
func (w *Workers) traceRows(ctx context.Context, ids []int64) map[int64]*pginboxtype.Event {
	evs := make(map[int64]*pginboxtype.Event, len(ids))
	for _, id := range ids {
		evs[id] = &pginboxtype.Event{ID: id}
	}
	found, err := w.readTraceRows(ctx, traceRowsSQL, ids, evs)
	if err == nil && found < len(ids) {
		var moved []int64
		for _, id := range ids {
			if evs[id].Provider == "" {
				moved = append(moved, id)
			}
		}
		_, err = w.readTraceRows(ctx, traceMovedSQL, moved, evs)
	}
	if err != nil {
		w.traceReadWarn.Do(func() {
			w.Log.Warn("cannot read the events' stored trace context; their pginbox.process spans start traces of their own", "error", err)
		})
	}
	return evs
}

// readTraceRows runs one of the trace queries for ids and puts the events
// it finds into evs; it returns how many it found.
func (w *Workers) readTraceRows(ctx context.Context, query string, ids []int64, evs map[int64]*pginboxtype.Event) (int, error) {
	rows, err := w.Pool.Query(ctx, query, ids)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var ev pginboxtype.Event
		if err := rows.Scan(&ev.ID, &ev.Provider, &ev.EventType, &ev.Source, &ev.Trace.Parent, &ev.Trace.Link, &ev.Attempt); err != nil {
			return found, err
		}
		evs[ev.ID] = &ev
		found++
	}
	return found, rows.Err()
}
