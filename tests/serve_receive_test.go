package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestServeConcurrentDuplicates: 64 concurrent deliveries of one event give
// one created, 63 duplicates and one row.
func TestServeConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := sampleBody("sume", "job_storm")

	var mu sync.Mutex
	outcomes := map[string]int{}
	ids := map[float64]bool{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, body, time.Now()), []byte(body))
			mu.Lock()
			defer mu.Unlock()
			if status != 200 {
				outcomes[fmt.Sprintf("status %d", status)]++
				return
			}
			outcomes[out["outcome"].(string)]++
			ids[out["event_id"].(float64)] = true
		}()
	}
	close(start)
	wg.Wait()
	if outcomes["created"] != 1 || outcomes["duplicate"] != 63 || len(ids) != 1 {
		t.Fatalf("outcomes %v, event ids %v; want 1 created, 63 duplicate, one id", outcomes, ids)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 1 {
		t.Fatalf("rows = %d", n)
	}
}

// TestServeRejections: every rejection path answers its status with a
// one-line JSON error and writes nothing.
func TestServeRejections(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	srv := startServer(t, conf.URL(), runner.Config{MaxBody: 4096}, sumeOnly)
	client := &http.Client{Timeout: 10 * time.Second}
	signed := func(body string) http.Header { return signSume(sumeSecret, body, time.Now()) }
	with := func(h http.Header, k, v string) http.Header { h.Set(k, v); return h }

	tests := []struct {
		name, path, body string
		header           func(body string) http.Header
		status           int
		reason           string
	}{
		{"unknown provider", "/webhooks/nope", `{"job_id": "a"}`, signed, 404, "unknown provider"},
		{"oversized body", "/webhooks/sume", `{"job_id": "big", "event": "x", "pad": "` + strings.Repeat("x", 5000) + `"}`, signed, 413, "body too large"},
		{"not JSON", "/webhooks/sume", `job_id=a`, signed, 400, "body not json"},
		{"empty body", "/webhooks/sume", ``, signed, 400, "body not json"},
		{"whitespace body", "/webhooks/sume", "  \n ", signed, 400, "body not json"},
		{"JSON array", "/webhooks/sume", `[1,2]`, signed, 400, "body not json"},
		{"form content type", "/webhooks/sume", `{"job_id": "ct"}`, func(b string) http.Header {
			return with(signed(b), "Content-Type", "application/x-www-form-urlencoded")
		}, 415, "content type not json"},
		{"no idempotency key", "/webhooks/sume", `{"event": "job.completed", "payload": {"request_id": "nested"}}`, signed, 400, "idempotency key missing"},
		{"header id disagrees with body id", "/webhooks/sume", `{"id": "evt_1", "type": "file.created"}`, func(b string) http.Header {
			return with(signed(b), "X-Sume-Event-Id", "evt_2")
		}, 400, "event id mismatch"},
		{"no event type", "/webhooks/sume", `{"job_id": "no_type"}`, signed, 400, "event type missing"},
		{"unsigned", "/webhooks/sume", `{"job_id": "unsigned", "event": "x"}`, func(string) http.Header { return http.Header{} }, 401, "signature missing"},
	}
	for _, tc := range tests {
		status, out := post(t, client, srv.Base+tc.path, tc.header(tc.body), []byte(tc.body))
		if status != tc.status || out["error"] != tc.reason {
			t.Errorf("%s: %d %v, want %d %q", tc.name, status, out, tc.status, tc.reason)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
		t.Fatalf("rejected deliveries wrote %d rows", n)
	}
	// GET on the webhook route is not a delivery.
	resp, err := client.Get(srv.Base + "/webhooks/sume")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /webhooks/sume: %d", resp.StatusCode)
	}
}

// TestServeSumeKeys: the Sume key comes from the signed body (job_id, then
// the envelope request_id, never payload.request_id, then id), the header
// only when the body has none.
func TestServeSumeKeys(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	client := &http.Client{Timeout: 10 * time.Second}
	tests := []struct {
		name, body, headerID, wantKey, wantType string
	}{
		{"job webhook", `{"job_id": "job_9", "request_id": "req_9", "id": "evt_9", "event": "job.completed"}`, "", "job_9", "job.completed"},
		{"format run envelope", `{"request_id": "req_1", "event": "format.completed", "payload": {"request_id": "req_inner"}}`, "", "req_1", "format.completed"},
		{"resource event", `{"id": "evt_5", "type": "file.created"}`, "evt_5", "evt_5", "file.created"},
		{"header only", `{"type": "ping"}`, "evt_hdr", "evt_hdr", "ping"},
	}
	for _, tc := range tests {
		h := signSume(sumeSecret, tc.body, time.Now())
		if tc.headerID != "" {
			h.Set("X-Sume-Event-Id", tc.headerID)
		}
		status, out := post(t, client, srv.Base+"/webhooks/sume", h, []byte(tc.body))
		if status != 200 {
			t.Fatalf("%s: %d %v", tc.name, status, out)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = $1 AND event_type = $2 AND id = $3`,
			tc.wantKey, tc.wantType, int64(out["event_id"].(float64))); n != 1 {
			t.Errorf("%s: not stored under key %q with type %q", tc.name, tc.wantKey, tc.wantType)
		}
	}
}

// TestServeDatabaseDown: with the database stopped the runner answers 503
// (never 2xx) and the same delivery succeeds once it is back.
func TestServeDatabaseDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopMode(context.Background(), "immediate"); _ = c.Remove() })
	url := c.URL("postgres")
	srv := startServer(t, url, runner.Config{IngestTimeout: 3 * time.Second}, sumeOnly)
	client := &http.Client{Timeout: 20 * time.Second}
	body := sampleBody("sume", "job_during_outage")

	if status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, sampleBody("sume", "before"), time.Now()), []byte(sampleBody("sume", "before"))); status != 200 {
		t.Fatalf("before the outage: %d %v", status, out)
	}
	if err := c.StopMode(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, body, time.Now()), []byte(body))
		if status != http.StatusServiceUnavailable || out["error"] != "database unavailable" {
			t.Fatalf("database down, attempt %d: %d %v, want 503", i, status, out)
		}
	}
	resp, err := client.Get(srv.Base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the database down: %d", resp.StatusCode)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, body, time.Now()), []byte(body))
		if status == 200 {
			if out["outcome"] != "created" {
				t.Fatalf("after recovery: %v, want created (nothing was stored during the outage)", out)
			}
			break
		}
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after restart: %d %v", status, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pool := PoolFor(t, url, 2)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('before', 'job_during_outage')`); n != 2 {
		t.Fatalf("rows after recovery: %d", n)
	}
}
