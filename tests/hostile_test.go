package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// hostileBodies are signed correctly: only their content is hostile.
func hostileBodies() []struct {
	name, body string
	status     int
	reason     string
} {
	deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	deeper := strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000)
	return []struct {
		name, body string
		status     int
		reason     string
	}{
		{"NUL byte in a string", "{\"job_id\": \"a\x00b\", \"event\": \"x\"}", 400, "body not json"},
		{"escaped NUL in the payload", `{"job_id": "nul", "event": "x", "note": "\u0000"}`, 400, "body not json"},
		{"invalid UTF-8", "{\"job_id\": \"\xff\xfe\", \"event\": \"x\"}", 400, "body not json"},
		{"10,000-character id", `{"job_id": "` + strings.Repeat("x", 10000) + `", "event": "x"}`, 400, "idempotency key invalid"},
		{"control character in the id", `{"job_id": "a\tb", "event": "x"}`, 400, "idempotency key invalid"},
		{"deeply nested payload (5,000 levels)", `{"job_id": "deep", "event": "x", "p": ` + deep + `}`, 400, "body nested too deep"},
		{"very deeply nested (20,000 levels)", `{"job_id": "deeper", "event": "x", "p": ` + deeper + `}`, 400, "body not json"},
		{"nested 65 levels", `{"job_id": "d65", "event": "x", "p": ` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, 400, "body nested too deep"},
		{"number beyond float64 as id", `{"job_id": 1e400, "event": "x"}`, 400, "idempotency key invalid"},
		{"number beyond numeric in the payload", `{"job_id": "bignum", "event": "x", "n": 1e1000000}`, 400, "body not json"},
		{"number with too many decimals", `{"job_id": "tiny", "event": "x", "n": 1e-16384}`, 400, "body not json"},
		{"empty body", ``, 400, "body not json"},
		{"whitespace-only body", " \n\t ", 400, "body not json"},
		{"trailing garbage", `{"job_id": "t", "event": "x"} {}`, 400, "body not json"},
		{"lone surrogate escape", `{"job_id": "s", "event": "x", "v": "\ud800"}`, 400, "body not json"},
	}
}

// TestHostileHTTP: hostile but correctly signed bodies get a clear 4xx —
// never a 500 or 503 (which would make the provider retry forever) — and
// write no row.
func TestHostileHTTP(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	client := &http.Client{Timeout: 20 * time.Second}
	for _, tc := range hostileBodies() {
		status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, tc.body, time.Now()), []byte(tc.body))
		if status != tc.status || (tc.reason != "" && out["error"] != tc.reason) {
			t.Errorf("%s: %d %v, want %d %q", tc.name, status, out, tc.status, tc.reason)
		}
		t.Logf("%s → %d %v", tc.name, status, out["error"])
	}
	// 64 levels is the limit, and allowed.
	ok64 := `{"job_id": "d64", "event": "x", "p": ` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`
	if status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, ok64, time.Now()), []byte(ok64)); status != 200 {
		t.Fatalf("64 levels: %d %v", status, out)
	}
	// Duplicate keys: the last one wins, in Go and in jsonb alike, so the
	// key the runner stores is the key the stored payload shows.
	dup := `{"job_id": "first", "job_id": "second", "event": "x"}`
	if status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, dup, time.Now()), []byte(dup)); status != 200 {
		t.Fatalf("duplicate keys: %d %v", status, out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'second' AND payload->>'job_id' = 'second'`); n != 1 {
		t.Fatal("duplicate keys: stored key and payload disagree")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 2 {
		t.Fatalf("hostile bodies wrote %d rows", n-2)
	}
}

// TestHostileSQL: the same values straight into ingest_webhook() raise a
// clear exception and write nothing.
func TestHostileSQL(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	deep := strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000)
	tests := []struct {
		name, id, payload, code, msg string
	}{
		{"NUL byte in the id", "a\x00b", `{}`, "22021", "invalid byte sequence"},
		{"escaped NUL in the payload", "x", `{"v": "\u0000"}`, "22P05", "unsupported Unicode escape"},
		{"invalid UTF-8 in the id", "\xff", `{}`, "22021", "invalid byte sequence"},
		{"10,000-character id", strings.Repeat("x", 10000), `{}`, "22001", "external_id is 10000 bytes long"},
		{"nested 20,000 levels", "x", `{"p": ` + deep + `}`, "54001", "stack depth limit exceeded"},
		{"number beyond numeric", "x", `{"n": 1e1000000}`, "22003", "value overflows numeric format"},
		{"empty payload text", "x", ``, "22P02", "invalid input syntax for type json"},
		{"whitespace payload", "x", "  ", "22P02", "invalid input syntax for type json"},
	}
	for _, tc := range tests {
		_, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('p', $1::text, 't', $2::jsonb)`, tc.id, tc.payload)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		t.Logf("%s → %v", tc.name, err)
		if !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want SQLSTATE %s containing %q", tc.name, err, tc.code, tc.msg)
		}
	}
	// Beyond float64 but within numeric: jsonb keeps the exact number.
	if _, outcome := ingest(t, pool, "p", "big", "t", `{"n": 1e400}`); outcome != "created" {
		t.Fatalf("1e400: %q", outcome)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 1 {
		t.Fatalf("hostile values wrote %d rows", n-1)
	}
}
