package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes pginbox sets on its spans.
const (
	AttrProvider  = attribute.Key("pginbox.provider")
	AttrEventID   = attribute.Key("pginbox.event_id")
	AttrOutcome   = attribute.Key("pginbox.outcome")
	AttrAttempt   = attribute.Key("pginbox.attempt")
	AttrEventType = attribute.Key("pginbox.event_type")
	AttrSource    = attribute.Key("pginbox.source")
	AttrReplayed  = attribute.Key("pginbox.replayed")
	AttrBatchSize = attribute.Key("pginbox.batch_size")
	AttrLeaseMode = attribute.Key("pginbox.lease_mode")
)

// ProcessSpanName is the name of the span of one handler run.
const ProcessSpanName = "pginbox.process"

// Run describes one handler run for its span.
type Run struct {
	EventID   int64
	Attempt   int32
	Provider  string
	EventType string
	Source    string
	// TraceParent is webhooks.events.trace_parent: the delivery's span.
	TraceParent string
	// TraceLink is webhooks.events.trace_link, where a replay moved the
	// delivery's span: the run starts a trace of its own, linked to it.
	TraceLink string
	// LeaseMode names the lease strategy that ran it.
	LeaseMode string
}

// StartProcess starts the pginbox.process span of one handler run: a child
// of the delivery's span stored with the event, so the run is in the
// delivery's trace however much later and on whichever runner it happens;
// the root of a trace of its own, linked to the delivery's, once the event
// was replayed (trace_link); a plain root when nothing was stored
// (backfilled events, events stored with tracing off). opts may set the start time. Off: ctx
// and a no-op span.
func (t *Tracing) StartProcess(ctx context.Context, r Run, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !t.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		AttrEventID.Int64(r.EventID),
		AttrAttempt.Int(int(r.Attempt)),
		AttrProvider.String(r.Provider),
		AttrEventType.String(r.EventType),
		AttrSource.String(r.Source),
		AttrLeaseMode.String(r.LeaseMode),
	))
	if parent, ok := ParseTraceParent(r.TraceParent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
		if link, ok := ParseTraceParent(r.TraceLink); ok {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}), trace.WithAttributes(AttrReplayed.Bool(true)))
		}
	}
	return t.tracer.Start(ctx, ProcessSpanName, opts...)
}

// EndProcess ends a run's span: an error status and event when the
// handler (or its completion) failed. at, when not zero, is the end time.
func EndProcess(span trace.Span, err error, at time.Time) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	if at.IsZero() {
		span.End()
		return
	}
	span.End(trace.WithTimestamp(at))
}
