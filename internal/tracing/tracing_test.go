package tracing

import (
	"context"
	"strings"
	"testing"
)

// TestFromEnv: traces are on only with an endpoint, and OTEL_SDK_DISABLED
// or OTEL_TRACES_EXPORTER=none turn them off whatever else is set; an
// unsupported protocol or exporter is refused with the variable's name.
func TestFromEnv(t *testing.T) {
	t.Parallel()
	const ep = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep + "/v1/traces"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "TRUE"}, false, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"zipkin", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr, err := FromEnv(context.Background(), func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background()) //nolint:errcheck // nothing was exported
			if tr.Enabled() != tc.on {
				t.Fatalf("enabled %v, want %v", tr.Enabled(), tc.on)
			}
			if !tc.on && tr.PgxTracer() != nil {
				t.Fatal("off, yet a pgx tracer")
			}
		})
	}
}

// TestTraceParentRoundTrip: a stored traceparent reads back as the span
// context it was written from; malformed ones are refused.
func TestTraceParentRoundTrip(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := ParseTraceParent(tp)
	if !ok || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() {
		t.Fatalf("parse %s: %v %v", tp, sc, ok)
	}
	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if _, ok := ParseTraceParent(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if got := TraceParent(context.Background()); got != "" {
		t.Errorf("no span: %q", got)
	}
}
