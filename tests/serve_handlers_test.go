package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// TestServeSQLHandler: deliveries over HTTP are processed by the sql:
// handler exactly once each.
func TestServeSQLHandler(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h := sideTable(t, pool)
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 4, BatchSize: 16}, sumeOnly)
	client := &http.Client{Timeout: 10 * time.Second}
	const n = 300
	for i := 0; i < n; i++ {
		body := sampleBody("sume", fmt.Sprintf("job_%d", i))
		for rep := 0; rep < 2; rep++ { // every event delivered twice
			if status, out := post(t, client, srv.Base+"/webhooks/sume", signSume(sumeSecret, body, time.Now()), []byte(body)); status != 200 {
				t.Fatalf("delivery %d: %d %v", i, status, out)
			}
		}
	}
	waitFor(t, 30*time.Second, "every event processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == n
	})
	if got := queryInt(t, pool, `SELECT count(*) FROM (SELECT event_id FROM app.seen GROUP BY event_id HAVING count(*) = 1) x`); got != n {
		t.Fatalf("events handled exactly once: %d of %d (side table %d rows)", got, n, queryInt(t, pool, `SELECT count(*) FROM app.seen`))
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM app.seen`); got != n {
		t.Fatalf("side table rows %d, want %d", got, n)
	}
}

// TestServeSQLHandlerLostLease: a handler still running when its lease is
// rescued and re-claimed has its completion refused and its writes rolled
// back; the rest of its batch is unaffected (the two-phase lease: with the
// row lock as the lease there is no lease to lose).
func TestServeSQLHandlerLostLease(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h := sideTable(t, pool)
	// The slow event comes first in its batch, a quick one after it.
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', 'slow', 'job.completed', '{"sleep": 3}')`)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', 'quick', 'job.completed', '{}')`)
	startServer(t, conf.URL(), runner.Config{Handler: h, LeaseMode: "two-phase", Workers: 1, BatchSize: 10, Lease: 30 * time.Second, PollInterval: 100 * time.Millisecond}, sumeOnly)

	waitFor(t, 10*time.Second, "the slow event to be claimed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND status = 'processing'`) == 1
	})
	// Meanwhile the lease expires and another worker takes the event over.
	execSQL(t, pool, `UPDATE webhooks.events SET locked_until = now() - interval '1 second' WHERE external_id = 'slow'`)
	if n := queryInt(t, pool, `SELECT rescued FROM webhooks.rescue_leases()`); n != 1 {
		t.Fatalf("rescued %d", n)
	}
	var thiefAttempt int32
	var id int64
	if err := pool.QueryRow(context.Background(), `SELECT id, attempts FROM webhooks.claim('thief', 1)`).Scan(&id, &thiefAttempt); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the quick event to be processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'quick' AND status = 'processed'`) == 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM app.seen WHERE external_id = 'slow'`); n != 0 {
		t.Fatalf("the stale handler's write survived (%d rows)", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.seen WHERE external_id = 'quick'`); n != 1 {
		t.Fatalf("the quick event's write: %d rows", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'processing' AND locked_by = 'thief' AND attempts = $2`, id, thiefAttempt); n != 1 {
		t.Fatal("the new owner's lease was disturbed by the stale worker")
	}
}

// TestServeHTTPHandler: the http: handler POSTs each event with an
// Idempotency-Key; a 500 fails the attempt (recorded in last_error) and the
// retry completes it.
func TestServeHTTPHandler(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	var mu sync.Mutex
	calls := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev runner.Event
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &ev); err != nil || r.Header.Get("Idempotency-Key") != strconv.FormatInt(ev.ID, 10) {
			http.Error(w, "bad request", 400)
			return
		}
		mu.Lock()
		calls[ev.ExternalID]++
		first := calls[ev.ExternalID] == 1
		mu.Unlock()
		if first {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer target.Close()
	h, err := runner.ParseHandler("http:"+target.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: 100 * time.Millisecond}, sumeOnly)
	for i := 0; i < 5; i++ {
		execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', $1, 'job.completed', '{}')`, fmt.Sprintf("h%d", i))
	}
	waitFor(t, 10*time.Second, "first attempts to fail", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE last_error LIKE '%500 Internal Server Error: upstream exploded%'`) >= 1
	})
	waitFor(t, 20*time.Second, "retries to complete", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed' AND attempts = 2 AND last_error IS NULL`) == 5
	})
	mu.Lock()
	defer mu.Unlock()
	for k, n := range calls {
		if n != 2 {
			t.Errorf("%s called %d times, want 2", k, n)
		}
	}
}

// TestServeGoHandlerPanic: a Go handler that panics fails that event, not
// the process; the other events are processed.
func TestServeGoHandlerPanic(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	execSQL(t, pool, `CREATE TABLE public.done (external_id text PRIMARY KEY)`)
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		if ev.ExternalID == "bomb" {
			panic("boom")
		}
		_, err := tx.Exec(ctx, `INSERT INTO public.done VALUES ($1)`, ev.ExternalID)
		return err
	})
	startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 1, PollInterval: 100 * time.Millisecond}, sumeOnly)
	for _, k := range []string{"a", "bomb", "b"} {
		execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', $1, 't', '{}')`, k)
	}
	waitFor(t, 10*time.Second, "the good events", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM public.done`) == 2
	})
	waitFor(t, 10*time.Second, "the panic to be recorded", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'bomb' AND status = 'pending' AND last_error LIKE 'handler panic: boom%'`) == 1
	})
}

// TestServeListenerKilled: with polling practically off, work written by
// another stack (NOTIFY) is still picked up after the listener's backend is
// terminated: the listener reconnects and drains the backlog.
func TestServeListenerKilled(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h, seen := recordingHandler()
	startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: time.Hour}, sumeOnly)
	listenerUp := func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-listener' AND datname = current_database()`) == 1
	}
	waitFor(t, 10*time.Second, "the listener to connect", listenerUp)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'one', 't', '{}', notify => true)`)
	waitFor(t, 10*time.Second, "the first event via NOTIFY", func() bool { return seen("one") })

	execSQL(t, pool, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pginbox-listener' AND datname = current_database()`)
	// Written while the listener is down: no notification reaches anyone.
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'two', 't', '{}', notify => true)`)
	waitFor(t, 15*time.Second, "the event written while the listener was down", func() bool { return seen("two") })
	waitFor(t, 10*time.Second, "the listener to reconnect", listenerUp)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'three', 't', '{}', notify => true)`)
	waitFor(t, 10*time.Second, "an event after the reconnect", func() bool { return seen("three") })
}

// TestServePollOnly: with LISTEN off, polling alone processes everything.
func TestServePollOnly(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h, seen := recordingHandler()
	startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: 200 * time.Millisecond, PollOnly: true}, sumeOnly)
	for i := 0; i < 50; i++ {
		execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', $1, 't', '{}')`, fmt.Sprintf("e%d", i))
	}
	waitFor(t, 15*time.Second, "polling to process everything", func() bool {
		for i := 0; i < 50; i++ {
			if !seen(fmt.Sprintf("e%d", i)) {
				return false
			}
		}
		return true
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-listener' AND datname = current_database()`); n != 0 {
		t.Fatalf("a listener connected although LISTEN is off")
	}
}

// TestServeSQLHandlerBatchFallback: a sql: batch runs as one
// process_batch() statement; when one event's handler overruns the handler
// timeout the statement is cancelled, everything it did rolls back, and the
// batch runs again event by event, where the slow event alone times out and
// fails and the others are processed exactly once.
func TestServeSQLHandlerBatchFallback(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h := sideTable(t, pool)
	for i := 0; i < 5; i++ {
		execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', $1, 'job.completed', '{}')`, fmt.Sprintf("quick_%d", i))
	}
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', 'slow', 'job.completed', '{"sleep": 30}')`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE external_id = 'slow'`)
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 1, BatchSize: 10, Lease: 30 * time.Second,
		HandlerTimeout: time.Second, PollInterval: 100 * time.Millisecond}, sumeOnly)

	waitFor(t, 20*time.Second, "the quick events processed and the slow one dead", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id LIKE 'quick_%' AND status = 'processed'`) == 5 &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND status = 'dead'`) == 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM app.seen`); n != 5 {
		t.Fatalf("side table rows %d, want one per quick event (5)", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT external_id FROM app.seen GROUP BY 1 HAVING count(*) = 1) x`); n != 5 {
		t.Fatalf("quick events handled exactly once: %d of 5", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND last_error LIKE '%cancel%'`); n != 1 {
		t.Fatal("the slow event's last_error does not say it was cancelled")
	}
	if v := metricValue(t, srv.Admin, "pginbox_batch_fallbacks_total"); v < 1 {
		t.Fatalf("pginbox_batch_fallbacks_total = %v, want at least 1", v)
	}
}
