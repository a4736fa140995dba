package ingest

import (
	"context"
	"net"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pginbox/pginbox/internal/tracing"
)

// route is the delivery route, the span's name after its method.
const route = "/webhooks/{provider}"

// startSpan starts a delivery's server span, named and attributed by the
// HTTP semantic conventions plus pginbox.provider.
//
// A traceparent header sent with the delivery is linked, never adopted as
// the parent: providers send none, and whoever can reach the endpoint could
// otherwise choose the trace id and force every delivery to be sampled. A
// tracing proxy in front still finds its request through the link.
func (rc *Receiver) startSpan(r *http.Request) (*http.Request, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithNewRoot(),
		trace.WithAttributes(
			semconv.HTTPRequestMethodPost,
			semconv.HTTPRoute(route),
			semconv.URLPath(r.URL.Path),
			semconv.URLScheme(scheme(r)),
			semconv.ServerAddress(r.Host),
			semconv.UserAgentOriginal(r.UserAgent()),
		),
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		opts = append(opts, trace.WithAttributes(semconv.ClientAddress(host)))
	}
	name := r.PathValue("provider")
	if _, ok := rc.Providers[name]; ok {
		opts = append(opts, trace.WithAttributes(tracing.AttrProvider.String(name)))
	}
	if sc, ok := tracing.FromHeader(r.Header); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := rc.Tracing.Tracer().Start(r.Context(), http.MethodPost+" "+route, opts...)
	return r.WithContext(ctx), span
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// spanStored records a stored delivery on its span (a no-op without one).
func spanStored(ctx context.Context, eventID int64, outcome string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		semconv.HTTPResponseStatusCode(http.StatusOK),
		tracing.AttrEventID.Int64(eventID),
		tracing.AttrOutcome.String(outcome),
	)
}

// rejected records a refused delivery on its span: the status, and an
// error status for a 5xx (a 4xx is the sender's fault, not the server's).
func rejected(ctx context.Context, status int, reason string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status), tracing.AttrOutcome.String("rejected"))
	if status >= 500 {
		span.SetAttributes(semconv.ErrorTypeKey.String(http.StatusText(status)))
		span.SetStatus(codes.Error, reason)
	}
}
