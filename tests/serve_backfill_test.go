package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
	"github.com/pginbox/pginbox/runner"
)

// TestServeBackfillsAfterScheduledReconcile: with PGINBOX_API_URL_SUME set,
// the runner asks Sume about every expectation past its deadline after each
// scheduled reconcile pass: a finished job is ingested as a backfill, an
// unknown one tombstoned, a running one postponed.
func TestServeBackfillsAfterScheduledReconcile(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sume-api-key" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/jobs/"), "/status")
		switch id {
		case "job_done":
			fmt.Fprint(w, `{"job_id": "job_done", "status": "COMPLETED"}`)
		case "job_running":
			fmt.Fprint(w, `{"job_id": "job_running", "status": "RUNNING"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	env := map[string]string{
		"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
		"PGINBOX_API_URL_SUME": api.URL, "PGINBOX_API_KEY_SUME": "sume-api-key",
	}
	cfg, err := runner.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 300 * time.Millisecond
	for _, id := range []string{"job_done", "job_running", "job_unknown"} {
		execSQL(t, pool, `SELECT webhooks.expect('sume', $1, now() - interval '1 minute')`, id)
	}
	startServer(t, conf.URL(), cfg, nil)
	waitFor(t, 20*time.Second, "the backfill to settle every gap", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.find_gaps()`) == 0
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'job_done' AND source = 'backfill' AND event_type = 'job.completed'`); n != 1 {
		t.Fatal("the finished job was not backfilled")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones WHERE external_id = 'job_unknown' AND reason = 'unknown to provider'`); n != 1 {
		t.Fatal("the unknown job was not tombstoned")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectations WHERE external_id = 'job_running' AND deadline > now() AND checks >= 1`); n != 1 {
		t.Fatal("the running job's deadline did not move")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs WHERE trigger = 'schedule'`); n < 1 {
		t.Fatal("no scheduled reconcile pass recorded")
	}
}

// TestServeBackfillHungAPIDoesNotStallReconcile: a provider API that
// accepts connections and never answers must not hold up reconciliation
// (lease rescue): scheduled reconcile passes keep their pace while backfill,
// a job of its own, gives up at its pass deadline (PGINBOX_BACKFILL_TIMEOUT).
func TestServeBackfillHungAPIDoesNotStallReconcile(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	var mu sync.Mutex
	var held []time.Duration // how long each abandoned request was held
	release := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		select {
		case <-r.Context().Done():
			mu.Lock()
			held = append(held, time.Since(start))
			mu.Unlock()
		case <-release:
		}
	}))
	defer api.Close()
	defer close(release)
	env := map[string]string{
		"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
		"PGINBOX_API_URL_SUME": api.URL, "PGINBOX_API_KEY_SUME": "sume-api-key",
		// 2 s, not less: the pass's own queries come first, and on a busy
		// machine they took 0.4 s of a 1 s deadline before the request.
		"PGINBOX_BACKFILL_TIMEOUT": "2s",
	}
	cfg, err := runner.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 200 * time.Millisecond
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'job_hung', now() - interval '1 minute')`)
	srv := startServer(t, conf.URL(), cfg, nil)
	time.Sleep(4 * time.Second)
	passes := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs WHERE trigger = 'schedule'`)
	srv.Stop(t)
	// 20 passes are due in 4 s; a reconcile that waited behind the hung API
	// would manage one.
	t.Logf("%d scheduled reconcile passes in 4s with a hung API", passes)
	if passes < 8 {
		t.Fatalf("%d scheduled reconcile passes in 4s, want at least 8 (every 200ms)", passes)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the hung request was held %v", held)
	if len(held) == 0 || held[0] < 1200*time.Millisecond || held[0] > 3*time.Second {
		t.Fatalf("the hung request was abandoned after %v, want about the 2s pass deadline", held)
	}
}

// TestServeBackfillsStripeEventLog: with a stripe provider's
// PGINBOX_API_URL_<NAME> and key, serve reads Stripe's event list after each
// scheduled reconcile pass and stores what never arrived as a webhook,
// without any expectation; the checkpoint follows.
func TestServeBackfillsStripeEventLog(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	f := stripefake.New("rk_test_read_events")
	defer f.Close()
	end := time.Now().Add(-10 * time.Minute)
	for i := range 250 {
		f.Add(stripefake.Event{ID: fmt.Sprintf("evt_serve_%03d", i), Type: "invoice.paid", Created: end.Add(-time.Duration(i) * time.Second)})
	}
	env := map[string]string{
		"PGINBOX_PROVIDERS": "stripe=stripe", "PGINBOX_SECRET_STRIPE": "whsec_serve_backfill_0123",
		"PGINBOX_API_URL_STRIPE": f.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_read_events", "PGINBOX_BACKFILL_LOOKBACK": "1h",
	}
	cfg, err := runner.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 300 * time.Millisecond
	startServer(t, conf.URL(), cfg, nil)
	waitFor(t, 20*time.Second, "every Stripe event stored", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND source = 'backfill'`) == 250
	})
	waitFor(t, 10*time.Second, "a checkpoint", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.backfill_checkpoints WHERE provider = 'stripe' AND read_until > now() - interval '2 minutes' AND recovered_total = 250`) == 1
	})
}

// TestServeBackfillPassesOverUnstorableEntries: serve exports
// pginbox_backfill_log_skipped_total{provider} as 0 for an event-log
// provider before any pass; an event of Stripe's list nested deeper than
// Postgres-bound ingest accepts is then passed over and counted, the events
// around it are stored, and the checkpoint moves.
func TestServeBackfillPassesOverUnstorableEntries(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	gate := make(chan struct{})
	created := time.Now().Add(-10 * time.Minute).Unix()
	event := func(id, data string) string {
		return fmt.Sprintf(`{"id": %q, "object": "event", "type": "invoice.paid", "created": %d, "data": {"object": %s}}`, id, created, data)
	}
	deep := strings.Repeat(`{"a":`, 80) + `{}` + strings.Repeat(`}`, 80)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		fmt.Fprintf(w, `{"object": "list", "has_more": false, "data": [%s, %s, %s]}`,
			event("evt_serve_ok_1", `{}`), event("evt_serve_deep", deep), event("evt_serve_ok_2", `{}`))
	}))
	defer api.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	env := map[string]string{
		"PGINBOX_PROVIDERS": "stripe=stripe", "PGINBOX_SECRET_STRIPE": "whsec_serve_backfill_0123",
		"PGINBOX_API_URL_STRIPE": api.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_read_events", "PGINBOX_BACKFILL_LOOKBACK": "1h",
	}
	cfg, err := runner.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 300 * time.Millisecond
	srv := startServer(t, conf.URL(), cfg, nil)
	const series = `pginbox_backfill_log_skipped_total{provider="stripe"}`
	if body := httpGet(t, srv.Admin+"/metrics"); !strings.Contains(body, series+" 0") {
		t.Fatalf("/metrics before any pass does not serve %s 0", series)
	}
	close(gate)
	waitFor(t, 20*time.Second, "the bad event counted and the others stored", func() bool {
		return strings.Contains(httpGet(t, srv.Admin+"/metrics"), series+" ") && !strings.Contains(httpGet(t, srv.Admin+"/metrics"), series+" 0") &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('evt_serve_ok_1', 'evt_serve_ok_2')`) == 2
	})
	waitFor(t, 10*time.Second, "the checkpoint moved", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.backfill_checkpoints WHERE provider = 'stripe' AND read_until > now() - interval '2 minutes' AND last_error IS NULL`) == 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'evt_serve_deep'`); n != 0 {
		t.Fatalf("the event nested 81 deep was stored")
	}
}
