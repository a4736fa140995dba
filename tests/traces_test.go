package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// tracedHandlerSQL is a sql: handler that fails for payloads with "fail".
const tracedHandlerSQL = `
	CREATE SCHEMA app;
	CREATE FUNCTION app.on_traced(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    IF e.payload ? 'fail' THEN
	        RAISE EXCEPTION 'traced handler refuses %', e.external_id;
	    END IF;
	END $$;`

// tracedEnv is the environment of a runner exporting traces to rc.
func tracedEnv(dbURL string, rc *otlpReceiver, extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL":                dbURL,
		"PGINBOX_PROVIDERS":           "sume=sume",
		"PGINBOX_SECRET_SUME":         sumeSecret,
		"PGINBOX_HANDLER":             "sql:app.on_traced",
		"PGINBOX_WORKERS":             "2",
		"PGINBOX_POLL_INTERVAL":       "100ms",
		"PGINBOX_LOG_LEVEL":           "warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT": rc.Endpoint,
		"OTEL_BSP_SCHEDULE_DELAY":     "100",
		"OTEL_SERVICE_NAME":           "",
		"OTEL_TRACES_SAMPLER":         "",
		"OTEL_SDK_DISABLED":           "",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// sentTraceParent is a traceparent header a sender (a proxy, or anyone)
// adds to the deliveries: linked from the server span, never its parent.
const sentTraceParent = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"

// deliverSume posts one signed Sume delivery, with sentTraceParent, and
// returns its event id.
func deliverSume(t *testing.T, base, key, body string) int64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/sume", strings.NewReader(body))
	req.Header = signSume(sumeSecret, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", sentTraceParent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delivery %s: status %d", key, resp.StatusCode)
	}
	var id int64
	if _, err := fmt.Fscanf(resp.Body, `{"event_id":%d`, &id); err != nil {
		t.Fatalf("delivery %s: %v", key, err)
	}
	return id
}

// findSpan returns the first span named name whose attribute key is value.
func findSpan(spans []otlpSpan, name, key, value string) (otlpSpan, bool) {
	for _, s := range spans {
		if s.Name == name && s.Attrs[key] == value {
			return s, true
		}
	}
	return otlpSpan{}, false
}

// waitSpan waits for a span named name with attribute key = value.
func waitSpan(t *testing.T, rc *otlpReceiver, name, key, value string) otlpSpan {
	t.Helper()
	var found otlpSpan
	waitFor(t, 30*time.Second, fmt.Sprintf("span %s with %s=%s", name, key, value), func() bool {
		var ok bool
		found, ok = findSpan(rc.Spans(), name, key, value)
		return ok
	})
	return found
}

// TestTracesJoinDeliveryAndProcessing: against a real OTLP receiver
// (OTLP/HTTP protobuf, and OTLP/gRPC), a signed delivery gets a server span
// POST /webhooks/{provider} with the HTTP attributes, pginbox.provider,
// pginbox.event_id and pginbox.outcome, and its database call as a child
// span; the handler run, by another runner started after the delivery was
// stored, is a pginbox.process span in the same trace, a child of the
// server span, with pginbox.event_id and pginbox.attempt; a failing handler
// run is an error span; a replayed event's run starts a trace of its own
// linked to the delivery's. Every lease mode of a sql: handler is covered.
// A traceparent header sent with a delivery is linked, never adopted as the
// parent (the sender would choose the trace id and the sampling).
func TestTracesJoinDeliveryAndProcessing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, protocol, leaseMode, spanMode string
	}{
		{"http-rowlock", "http/protobuf", "", "row-lock-sql"},
		{"grpc-twophase", "grpc", "two-phase", "two-phase-batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			execSQL(t, pool, tracedHandlerSQL)
			var rc *otlpReceiver
			if tc.protocol == "grpc" {
				rc = startOTLPGRPC(t)
			} else {
				rc = startOTLPHTTP(t)
			}
			extra := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol, "PGINBOX_LEASE_MODE": tc.leaseMode}
			// The runner that receives runs no handler: another one,
			// started later, processes the events.
			ingestOnly := tracedEnv(conf.URL(), rc, extra)
			ingestOnly["PGINBOX_HANDLER"] = "none"
			front := startRunner(t, ingestOnly)

			okID := deliverSume(t, front.Base, "job_ok", sampleBody("sume", "job_ok"))
			badID := deliverSume(t, front.Base, "job_bad", `{"job_id": "job_bad", "event": "job.failed", "fail": true}`)

			server := waitSpan(t, rc, "POST /webhooks/{provider}", "pginbox.event_id", fmt.Sprint(okID))
			if server.Kind != tracepb.Span_SPAN_KIND_SERVER || server.Service != "pginbox" || server.ParentSpanID != "" ||
				server.TraceID == strings.Split(sentTraceParent, "-")[1] {
				t.Fatalf("server span: kind %v service %q parent %q trace %s: want a root of its own (the sent traceparent only linked)",
					server.Kind, server.Service, server.ParentSpanID, server.TraceID)
			}
			if len(server.LinkTraces) != 1 || server.LinkTraces[0] != strings.Split(sentTraceParent, "-")[1] {
				t.Errorf("server span links %v, want the sent traceparent's trace", server.LinkTraces)
			}
			for k, want := range map[string]string{
				"http.request.method": "POST", "http.route": "/webhooks/{provider}", "url.path": "/webhooks/sume",
				"http.response.status_code": "200", "pginbox.provider": "sume", "pginbox.outcome": "created",
			} {
				if got := server.Attrs[k]; got != want {
					t.Errorf("server span %s = %q, want %q", k, got, want)
				}
			}
			var tp string
			if err := pool.QueryRow(t.Context(), `SELECT trace_parent FROM webhooks.events WHERE id = $1`, okID).Scan(&tp); err != nil {
				t.Fatal(err)
			}
			if want := "00-" + server.TraceID + "-" + server.SpanID + "-01"; tp != want {
				t.Fatalf("stored trace_parent %q, want the server span's %q", tp, want)
			}
			var dbChild bool
			for _, s := range rc.Spans() {
				dbChild = dbChild || (s.TraceID == server.TraceID && s.ParentSpanID == server.SpanID && s.Attrs["db.system.name"] == "postgresql")
			}
			if !dbChild {
				t.Errorf("no database span under the server span")
			}

			startRunner(t, tracedEnv(conf.URL(), rc, extra))
			run := waitSpan(t, rc, "pginbox.process", "pginbox.event_id", fmt.Sprint(okID))
			if run.TraceID != server.TraceID || run.ParentSpanID != server.SpanID {
				t.Fatalf("process span in trace %s under %s, want trace %s under the server span %s",
					run.TraceID, run.ParentSpanID, server.TraceID, server.SpanID)
			}
			if run.Attrs["pginbox.attempt"] != "1" || run.Error || run.Attrs["pginbox.lease_mode"] != tc.spanMode ||
				run.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
				t.Errorf("process span: attempt %q error %v lease mode %q (want %s) kind %v",
					run.Attrs["pginbox.attempt"], run.Error, run.Attrs["pginbox.lease_mode"], tc.spanMode, run.Kind)
			}

			badServer := waitSpan(t, rc, "POST /webhooks/{provider}", "pginbox.event_id", fmt.Sprint(badID))
			bad := waitSpan(t, rc, "pginbox.process", "pginbox.event_id", fmt.Sprint(badID))
			if !bad.Error || !strings.Contains(bad.StatusMessage, "traced handler refuses job_bad") {
				t.Errorf("failing run: error %v, message %q", bad.Error, bad.StatusMessage)
			}
			if bad.TraceID != badServer.TraceID || bad.ParentSpanID != badServer.SpanID {
				t.Errorf("failing run not under its delivery's span")
			}

			execSQL(t, pool, `SELECT webhooks.replay($1::bigint, 'traces test')`, okID)
			waitFor(t, 30*time.Second, "the replayed run's span", func() bool {
				for _, s := range rc.Spans() {
					if s.Name == "pginbox.process" && s.Attrs["pginbox.event_id"] == fmt.Sprint(okID) && s.SpanID != run.SpanID {
						if s.TraceID == server.TraceID || s.ParentSpanID != "" {
							t.Fatalf("replayed run joined trace %s under %q: want a trace of its own", s.TraceID, s.ParentSpanID)
						}
						if len(s.LinkSpan) != 1 || s.LinkTraces[0] != server.TraceID || s.LinkSpan[0] != server.SpanID {
							t.Fatalf("replayed run links %v/%v, want the delivery's span", s.LinkTraces, s.LinkSpan)
						}
						return true
					}
				}
				return false
			})
		})
	}
}

// TestTracesOffExportNothing: with OTEL_SDK_DISABLED=true (endpoint set)
// or with no endpoint, a delivery and its handler run export nothing and
// store no trace context.
func TestTracesOffExportNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{"no-endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			execSQL(t, pool, tracedHandlerSQL)
			rc := startOTLPHTTP(t)
			p := startRunner(t, tracedEnv(conf.URL(), rc, tc.env))
			id := deliverSume(t, p.Base, "job_off", sampleBody("sume", "job_off"))
			waitFor(t, 30*time.Second, "the event processed", func() bool {
				return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'processed'`, id) == 1
			})
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE trace_parent IS NOT NULL`); n != 0 {
				t.Errorf("%d events store a trace context with tracing off", n)
			}
			if err := p.Terminate(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			if n := rc.Requests(); n != 0 {
				t.Errorf("tracing off, yet %d export requests reached the receiver", n)
			}
		})
	}
}

// TestIngestStoresTraceParent: ingest_webhook(trace_parent => ...) and
// ingest_signed(..., trace_parent) store a well-formed W3C traceparent with
// a new event; a malformed one is stored as NULL (never refused); a
// redelivery keeps the first; a replay moves it to trace_link.
func TestIngestStoresTraceParent(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const other = "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01"
	stored := func(key string) (parent, link *string) {
		t.Helper()
		if err := pool.QueryRow(t.Context(), `SELECT trace_parent, trace_link FROM webhooks.events WHERE external_id = $1`, key).Scan(&parent, &link); err != nil {
			t.Fatal(err)
		}
		return parent, link
	}
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'good', 't', '{}', trace_parent => $1)`, tp)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'bad', 't', '{}', trace_parent => 'not a traceparent')`)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'none', 't', '{}')`)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'good', 't', '{"v": 2}', trace_parent => $1)`, other)
	if p, _ := stored("good"); p == nil || *p != tp {
		t.Errorf("good: trace_parent %v, want %s (kept across a redelivery)", p, tp)
	}
	for _, key := range []string{"bad", "none"} {
		if p, _ := stored(key); p != nil {
			t.Errorf("%s: trace_parent %q, want NULL", key, *p)
		}
	}

	execSQL(t, pool, `SELECT webhooks.set_provider('sume', 'sume', ARRAY['sekret'])`)
	body := `{"job_id": "signed_traced", "event": "job.completed"}`
	h := signSume("sekret", body, time.Now())
	headers := map[string]string{}
	for k := range h {
		headers[k] = h.Get(k)
	}
	execSQL(t, pool, `SELECT webhooks.ingest_signed('sume', $1::jsonb, convert_to($2, 'UTF8'), $3)`, headers, body, tp)
	if p, _ := stored("signed_traced"); p == nil || *p != tp {
		t.Errorf("ingest_signed: trace_parent %v, want %s", p, tp)
	}

	execSQL(t, pool, `SELECT webhooks.replay(id, 'traces test') FROM webhooks.events WHERE external_id = 'good'`)
	if p, l := stored("good"); p != nil || l == nil || *l != tp {
		t.Errorf("after a replay: trace_parent %v, trace_link %v; want NULL and %s", p, l, tp)
	}
}
