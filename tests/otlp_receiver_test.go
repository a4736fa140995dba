package tests

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is one span an OTLP receiver got, flattened for assertions.
type otlpSpan struct {
	Service              string
	TraceID, SpanID      string
	ParentSpanID         string
	Name                 string
	Kind                 tracepb.Span_SpanKind
	Attrs                map[string]string
	Error                bool
	StatusMessage        string
	LinkTraces, LinkSpan []string
}

// otlpReceiver is a real OTLP trace endpoint: OTLP/HTTP (POST /v1/traces,
// application/x-protobuf) or OTLP/gRPC, decoding every
// ExportTraceServiceRequest the runner's exporter sends.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Endpoint is what OTEL_EXPORTER_OTLP_ENDPOINT should say.
	Endpoint string

	mu       sync.Mutex
	spans    []otlpSpan
	requests int
}

// startOTLPHTTP starts an OTLP/HTTP receiver for the test.
func startOTLPHTTP(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.add(&req)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	rc.Endpoint = srv.URL
	return rc
}

// startOTLPGRPC starts an OTLP/gRPC receiver for the test.
func startOTLPGRPC(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &otlpReceiver{Endpoint: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rc)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return rc
}

// Export is the gRPC TraceService's one method.
func (rc *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	rc.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (rc *otlpReceiver) add(req *collectortrace.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	for _, rs := range req.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := otlpSpan{
					Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(),
					Attrs: attrMap(s.GetAttributes()), Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					StatusMessage: s.GetStatus().GetMessage(),
				}
				for _, l := range s.GetLinks() {
					sp.LinkTraces = append(sp.LinkTraces, hex.EncodeToString(l.GetTraceId()))
					sp.LinkSpan = append(sp.LinkSpan, hex.EncodeToString(l.GetSpanId()))
				}
				rc.spans = append(rc.spans, sp)
			}
		}
	}
}

// Spans returns a copy of every span received so far.
func (rc *otlpReceiver) Spans() []otlpSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]otlpSpan(nil), rc.spans...)
}

// Requests is how many export requests arrived.
func (rc *otlpReceiver) Requests() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
