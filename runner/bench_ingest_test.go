package runner_test

// Database-backed benchmarks of the ingest hot path. Each gets a fresh
// migrated database from the tests harness (a throwaway cluster when none is
// configured):
//
//	go test ./runner/ -run '^$' -bench 'Ingest|ServeSume' -benchtime 3s
//
// The end-to-end suite with the plain-insert ceiling, the runner as a
// separate process and the exactly-once audit is `make bench` (bench/).

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

var benchNote = strings.Repeat("x", 500)

func benchPayload(key string) string {
	return `{"event":"job.completed","job_id":"` + key + `","status":"COMPLETED","data":{"note":"` + benchNote + `"}}`
}

const benchIngestSQL = `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb)`

// BenchmarkIngestWebhookUnique: every call a new event.
func BenchmarkIngestWebhookUnique(b *testing.B) {
	pool := pgtest.NewPool(b, 64)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "evt_" + strconv.FormatInt(n.Add(1), 36)
			var id int64
			var outcome string
			if err := pool.QueryRow(ctx, benchIngestSQL, "bench", key, "job.completed", benchPayload(key)).Scan(&id, &outcome); err != nil {
				b.Fatal(err)
			}
			if outcome != "created" {
				b.Fatalf("%s: %s, want created", key, outcome)
			}
		}
	})
}

// BenchmarkIngestWebhookDuplicate: every call an identical redelivery of
// one of 1,000 pending events (Sume redelivers byte-identical bodies).
func BenchmarkIngestWebhookDuplicate(b *testing.B) {
	pool := pgtest.NewPool(b, 64)
	ctx := context.Background()
	const events = 1000
	for i := 0; i < events; i++ {
		key := fmt.Sprintf("dup_%d", i)
		if _, err := pool.Exec(ctx, benchIngestSQL, "bench", key, "job.completed", benchPayload(key)); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("dup_%d", n.Add(1)%events)
			var id int64
			var outcome string
			if err := pool.QueryRow(ctx, benchIngestSQL, "bench", key, "job.completed", benchPayload(key)).Scan(&id, &outcome); err != nil {
				b.Fatal(err)
			}
			if outcome != "duplicate" {
				b.Fatalf("%s: %s, want duplicate", key, outcome)
			}
		}
	})
}

// BenchmarkServeSumeDelivery: the receiver end to end, in process (no
// sockets): signature verification, key extraction, ingest, the 200.
func BenchmarkServeSumeDelivery(b *testing.B) {
	conf := pgtest.NewConfig(b)
	p, err := verify.New("sume", []string{"bench-secret-0123456789"})
	if err != nil {
		b.Fatal(err)
	}
	cfg := runner.Config{
		Addr: "127.0.0.1:0", Providers: map[string]verify.Provider{"sume": p},
		ReconcileEvery: -1, ChecksEvery: -1,
	}
	srv, err := runner.New(context.Background(), cfg, conf.URL(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	h := srv.Handler()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "job_" + strconv.FormatInt(n.Add(1), 36)
			body := benchPayload(key)
			req := httptest.NewRequest(http.MethodPost, "/webhooks/sume", strings.NewReader(body))
			req.Header = testsign.Sume("bench-secret-0123456789", body, time.Now())
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", key, rec.Code, rec.Body.String())
			}
		}
	})
}
