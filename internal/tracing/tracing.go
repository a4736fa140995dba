// Package tracing sets up OpenTelemetry traces from the SDK's standard
// environment and holds the few helpers pginbox's spans share: the W3C
// traceparent stored with each event (webhooks.events.trace_parent), the
// pginbox.process span that joins the delivery's trace, and the pgx tracer
// that makes database calls child spans.
//
// With no OTLP endpoint set (or OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER=none) nothing is exported and every helper is a
// no-op: a nil *Tracing is valid and off.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of pginbox's own spans.
const ScopeName = "github.com/pginbox/pginbox"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "pginbox"

// Tracing is pginbox's tracer and its exporter. The zero value and nil are
// off: spans are no-ops and nothing is stored or exported.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// FromEnv builds the tracer the standard OpenTelemetry environment asks
// for: OTLP over http/protobuf (the default) or grpc
// (OTEL_EXPORTER_OTLP_PROTOCOL or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) to
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT (the
// exporters read their other OTEL_EXPORTER_OTLP_* variables themselves),
// sampled as OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say (default
// parentbased_always_on), service.name from OTEL_SERVICE_NAME, default
// "pginbox". It returns nil (off) when no endpoint is set,
// OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none.
func FromEnv(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return nil, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported (http/protobuf or grpc)", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	// The default name first: WithFromEnv, later, overrides it.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself.
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{provider: provider, tracer: provider.Tracer(ScopeName)}, nil
}

// NewForProvider wraps an SDK tracer provider (tests, the bench): spans go
// wherever its processors send them.
func NewForProvider(p *sdktrace.TracerProvider) *Tracing {
	return &Tracing{provider: p, tracer: p.Tracer(ScopeName)}
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// Tracer returns pginbox's tracer, a no-op one when off.
func (t *Tracing) Tracer() trace.Tracer {
	if !t.Enabled() {
		return noop.NewTracerProvider().Tracer(ScopeName)
	}
	return t.tracer
}

// Shutdown exports what is still buffered, within ctx, and stops the
// exporter. Off: nothing to do.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("trace exporter shutdown: %w", err)
	}
	return nil
}

// PgxTracer returns the tracer to set as a pool's ConnConfig.Tracer, nil
// when off. Database calls become child spans of the span in their context
// and record nothing without one (a worker's poll is not a trace of its
// own). Query parameters (payloads) are never recorded.
func (t *Tracing) PgxTracer() pgx.QueryTracer {
	if !t.Enabled() {
		return nil
	}
	return otelpgx.NewTracer(
		otelpgx.WithTracerProvider(t.provider),
		otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelpgx.WithDisableAcquireTracer(),
	)
}

// traceContext is the W3C Trace Context propagator the stored traceparent
// is written and read with.
var traceContext = propagation.TraceContext{}

// TraceParent is the W3C traceparent of the span in ctx, "" when it has no
// valid span context (tracing off).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// ParseTraceParent reads a stored W3C traceparent; ok is false for an empty
// or malformed one.
func ParseTraceParent(s string) (sc trace.SpanContext, ok bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// FromHeader returns the span context of a request's traceparent header,
// if it carries a valid one.
func FromHeader(h interface{ Get(string) string }) (trace.SpanContext, bool) {
	return ParseTraceParent(h.Get("traceparent"))
}
