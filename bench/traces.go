package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracePoint is one tracing configuration measured end to end: deliveries
// over HTTP into a runner (no handler), then a second runner draining them
// with the sql: handler, both exporting to the bench's own OTLP/HTTP sink.
type tracePoint struct {
	Name    string `json:"name"`
	Sampler string `json:"sampler"`
	Events  int64  `json:"events"`
	// IngestPerS is accepted deliveries per second (first to last answer);
	// IngestMS their response times.
	IngestPerS float64 `json:"ingest_per_s"`
	IngestMS   dist    `json:"ingest_response_ms"`
	// ProcessPerS is events per second between the first and the last
	// handler start (bench.handled), as in the HTTP scenario's drain.
	ProcessPerS float64 `json:"process_per_s"`
	// Spans and ExportRequests are what the sink received.
	Spans          int64  `json:"spans_exported"`
	ExportRequests int64  `json:"export_requests"`
	Errors         int64  `json:"errors"`
	FirstError     string `json:"first_error,omitempty"`
}

// tracesResult is the tracing overhead: off, sampled at 100% and at 1%.
type tracesResult struct {
	Conns int `json:"conns"`
	// Deliveries is how many deliveries each point sends.
	Deliveries int          `json:"deliveries_per_point"`
	Points     []tracePoint `json:"points"`
	// Overheads in percent of the "off" point's rate (positive: slower).
	IngestOverhead100  float64 `json:"ingest_overhead_pct_sampled_100"`
	IngestOverhead1    float64 `json:"ingest_overhead_pct_sampled_1"`
	ProcessOverhead100 float64 `json:"process_overhead_pct_sampled_100"`
	ProcessOverhead1   float64 `json:"process_overhead_pct_sampled_1"`
}

// traceConfigs are the measured configurations: the environment each
// runner gets (plus the sink's endpoint when tracing is on).
var traceConfigs = []struct {
	name, sampler, ratio string
	on                   bool
}{
	{"off", "", "", false},
	{"sampled_100", "parentbased_always_on", "", true},
	{"sampled_1", "parentbased_traceidratio", "0.01", true},
}

// otlpSink is an OTLP/HTTP trace endpoint that decodes and counts.
type otlpSink struct {
	srv            *http.Server
	endpoint       string
	spans, exports atomic.Int64
}

func startSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{endpoint: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.exports.Add(1)
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				s.spans.Add(int64(len(ss.GetSpans())))
			}
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// runTraces measures the tracing overhead (scenario "traces").
func runTraces(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*tracesResult, error) {
	sink, err := startSink()
	if err != nil {
		return nil, err
	}
	defer sink.srv.Close()
	res := &tracesResult{Conns: cfg.traceConns, Deliveries: cfg.traceN}
	for _, tc := range traceConfigs {
		if ctx.Err() != nil {
			break
		}
		vars := map[string]string{"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret)}
		if tc.on {
			vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.endpoint
			vars["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
			vars["OTEL_TRACES_SAMPLER"] = tc.sampler
			vars["OTEL_TRACES_SAMPLER_ARG"] = tc.ratio
		}
		p, err := tracePointRun(ctx, env, cfg, sink, tc.name, vars, log)
		if err != nil {
			return res, fmt.Errorf("%s: %w", tc.name, err)
		}
		p.Sampler = tc.sampler
		if !tc.on {
			p.Sampler = "off (no endpoint)"
		}
		res.Points = append(res.Points, p)
		log.Info("traces point", "name", tc.name, "ingest_per_s", p.IngestPerS, "process_per_s", p.ProcessPerS, "spans", p.Spans)
	}
	if len(res.Points) == len(traceConfigs) {
		off := res.Points[0]
		res.IngestOverhead100 = overheadPct(off.IngestPerS, res.Points[1].IngestPerS)
		res.IngestOverhead1 = overheadPct(off.IngestPerS, res.Points[2].IngestPerS)
		res.ProcessOverhead100 = overheadPct(off.ProcessPerS, res.Points[1].ProcessPerS)
		res.ProcessOverhead1 = overheadPct(off.ProcessPerS, res.Points[2].ProcessPerS)
	}
	return res, nil
}

// overheadPct is how much slower rate is than base, in percent.
func overheadPct(base, rate float64) float64 {
	if base <= 0 {
		return 0
	}
	return round1((base - rate) / base * 100)
}

// tracePointRun ingests cfg.traceN deliveries through one runner and drains
// them with another, both with vars, in a scratch database of its own.
func tracePointRun(ctx context.Context, env *pgEnv, cfg config, sink *otlpSink, name string, vars map[string]string, log *slog.Logger) (tracePoint, error) {
	p := tracePoint{Name: name}
	scratch := "traces_" + name
	dbURL, err := env.scratch(ctx, scratch)
	if err != nil {
		return p, err
	}
	defer env.dropScratch(context.Background(), scratch)
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return p, err
	}
	defer probe.Close()
	spans0, exports0 := sink.spans.Load(), sink.exports.Load()

	rA, err := startRunner(ctx, cfg.bin, "traces-"+name+"-ingest", dbURL, cfg.logDir, merge(vars, map[string]string{"PGINBOX_HANDLER": "none"}))
	if err != nil {
		return p, err
	}
	client := newClient(cfg.traceConns)
	defer client.CloseIdleConnections()
	// Warm-up: every connection, the ingest pool, the exporter.
	for i := 0; i < cfg.traceConns; i++ {
		deliverSume(ctx, client, rA.base, eventKey("twarm-"+name, int64(i)), false)
	}
	var mu sync.Mutex
	var ms []float64
	var first, last time.Time
	work := make(chan int64)
	var wg sync.WaitGroup
	for g := 0; g < cfg.traceConns; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				d := deliverSume(ctx, client, rA.base, eventKey("trace-"+name, i), false)
				mu.Lock()
				if d.err != nil || d.status != http.StatusOK {
					p.Errors++
					if p.FirstError == "" {
						p.FirstError = fmt.Sprintf("status %d: %v", d.status, d.err)
					}
				} else {
					p.Events++
					ms = append(ms, float64(d.end.Sub(d.start))/1e6)
					if first.IsZero() || d.start.Before(first) {
						first = d.start
					}
					if d.end.After(last) {
						last = d.end
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := int64(0); i < int64(cfg.traceN) && ctx.Err() == nil; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if secs := last.Sub(first).Seconds(); secs > 0 {
		p.IngestPerS = round1(float64(p.Events) / secs)
	}
	p.IngestMS = msDist(ms)
	if err := rA.stop(); err != nil {
		log.Warn("traces ingest runner stop", "error", err)
	}

	rB, err := startRunner(ctx, cfg.bin, "traces-"+name+"-process", dbURL, cfg.logDir, merge(vars, map[string]string{"PGINBOX_HANDLER": "sql:bench.on_event"}))
	if err != nil {
		return p, err
	}
	waitDrained(ctx, probe, 30*time.Second, log)
	if err := rB.stop(); err != nil { // flushes the last spans
		log.Warn("traces process runner stop", "error", err)
	}
	var n int64
	var secs float64
	if err := probe.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM max(at) - min(at)), 0) FROM bench.handled`).Scan(&n, &secs); err != nil {
		return p, err
	}
	if secs > 0 {
		p.ProcessPerS = round1(float64(n-1) / secs)
	}
	p.Spans, p.ExportRequests = sink.spans.Load()-spans0, sink.exports.Load()-exports0
	return p, nil
}
