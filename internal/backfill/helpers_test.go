package backfill

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/sume"
)

// TestMain stops the throwaway Postgres cluster the harness may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// fakeReply is one scripted answer of the fake Sume API.
type fakeReply struct {
	status     int
	body       string
	retryAfter string
	block      bool // hang until the client gives up
}

// fakeSume is a Sume status API on httptest: it checks the bearer key and
// answers each job with its script, one reply per request (the last one
// repeats), recording when each request arrived.
type fakeSume struct {
	*httptest.Server
	key string

	mu       sync.Mutex
	script   map[string][]fakeReply
	hits     map[string][]time.Time
	auth     []string
	inFlight int
	maxIn    int
	delay    time.Duration
}

func newFakeSume(t *testing.T, key string, script map[string][]fakeReply) *fakeSume {
	t.Helper()
	f := &fakeSume{key: key, script: script, hits: map[string][]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}/status", func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, r.PathValue("id")) })
	mux.HandleFunc("GET /custom/{id}", func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, r.PathValue("id")) })
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSume) serve(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	f.hits[id] = append(f.hits[id], time.Now())
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	n := len(f.hits[id])
	replies := f.script[id]
	delay := f.delay
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if delay > 0 {
		time.Sleep(delay)
	}
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		http.Error(w, `{"error": "unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if len(replies) == 0 {
		http.Error(w, `{"error": "not found"}`, http.StatusNotFound)
		return
	}
	reply := replies[min(n, len(replies))-1]
	if reply.block {
		<-r.Context().Done()
		return
	}
	if reply.retryAfter != "" {
		w.Header().Set("Retry-After", reply.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.status)
	io.WriteString(w, reply.body)
}

func (f *fakeSume) requests(id string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.hits[id]...)
}

func ok200(body string) fakeReply { return fakeReply{status: 200, body: body} }

// fastOptions are Options with tiny delays; waits records the delays
// asked for between attempts (the sleeps themselves are skipped).
func fastOptions(waits *[]time.Duration) Options {
	var mu sync.Mutex
	return Options{
		Rate:           1000,
		LogRate:        1000,
		RequestTimeout: 5 * time.Second,
		MaxAttempts:    3,
		RetryBase:      time.Millisecond,
		RetryMax:       50 * time.Millisecond,
		Logger:         quietLogger,
		sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			if waits != nil {
				*waits = append(*waits, d)
			}
			mu.Unlock()
			return ctx.Err()
		},
	}
}

func dbInt(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func dbExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func lastBody(replies []fakeReply) string {
	if len(replies) == 0 {
		return "{}"
	}
	return replies[len(replies)-1].body
}

// mustSume returns a Sume status API for provider on base.
func mustSume(t *testing.T, provider, base, key string) *sume.StatusAPI {
	t.Helper()
	api, err := sume.NewStatusAPI(provider, base, key)
	if err != nil {
		t.Fatal(err)
	}
	return api
}
