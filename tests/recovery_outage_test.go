package tests

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
	"github.com/pginbox/pginbox/internal/provider/paddle/paddlefake"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
	"github.com/pginbox/pginbox/runner"
)

// outagePass is the drill's pass interval (PGINBOX_RECONCILE_EVERY).
const outagePass = 2 * time.Second

// outageNoise is what the drill allows on top of two pass intervals for the
// machine alone: the runner, its Postgres and the fakes share 2 cores with
// other test processes, and a backfill pass of 24 events takes up to a
// second of it (the GitHub row fetches 24 details at 25 requests a second).
const outageNoise = 3 * time.Second

// outageKind is one row of TestRecoveryAfterAPIOutage: a provider whose API
// goes down while deliveries are lost.
type outageKind struct {
	name     string
	provider string
	// log: an event log with a checkpoint (else Sume's status API).
	log bool
	// lost is how many deliveries are lost during the outage.
	lost int
	// failures is how many passes must give up before the API answers again.
	failures int
	// start starts the provider's fake API, answering 503 to every request
	// while down is set, and returns the provider's environment and lose,
	// which makes n deliveries go missing (events the provider created at at).
	start func(t *testing.T, down *atomic.Bool) (env map[string]string, lose func(pool *pgxpool.Pool, at time.Time, n int))
}

// failWhile is a fake's Fail: 503 while down.
func failWhile(down *atomic.Bool) func(int, *http.Request) (int, string) {
	return func(int, *http.Request) (int, string) {
		if down.Load() {
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	}
}

var outageKinds = []outageKind{
	{name: "stripe", provider: "stripe", log: true, lost: 24, failures: 1,
		start: func(t *testing.T, down *atomic.Bool) (map[string]string, func(*pgxpool.Pool, time.Time, int)) {
			f := stripefake.New("rk_test_read_events")
			f.Fail = failWhile(down)
			t.Cleanup(f.Close)
			return map[string]string{"PGINBOX_PROVIDERS": "stripe=stripe", "PGINBOX_SECRET_STRIPE": "whsec_outage_drill_0123",
					"PGINBOX_API_URL_STRIPE": f.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_read_events"},
				func(_ *pgxpool.Pool, at time.Time, n int) {
					for i := range n {
						f.Add(stripefake.Event{ID: fmt.Sprintf("evt_lost_%02d", i), Type: "invoice.paid", Created: at})
					}
				}
		}},
	// A longer outage: three passes give up, so the backoff (2, 4, then
	// 8 s) outlasts the API's return; only the probe starts the pass in time.
	{name: "stripe, three failed passes", provider: "stripe", log: true, lost: 24, failures: 3,
		start: func(t *testing.T, down *atomic.Bool) (map[string]string, func(*pgxpool.Pool, time.Time, int)) {
			f := stripefake.New("rk_test_read_events")
			f.Fail = failWhile(down)
			t.Cleanup(f.Close)
			return map[string]string{"PGINBOX_PROVIDERS": "stripe=stripe", "PGINBOX_SECRET_STRIPE": "whsec_outage_drill_0123",
					"PGINBOX_API_URL_STRIPE": f.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_read_events"},
				func(_ *pgxpool.Pool, at time.Time, n int) {
					for i := range n {
						f.Add(stripefake.Event{ID: fmt.Sprintf("evt_lost_%02d", i), Type: "invoice.paid", Created: at})
					}
				}
		}},
	{name: "github", provider: "gh", log: true, lost: 24, failures: 1,
		start: func(t *testing.T, down *atomic.Bool) (map[string]string, func(*pgxpool.Pool, time.Time, int)) {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			f := githubfake.New("77", &k.PublicKey)
			f.Fail = failWhile(down)
			t.Cleanup(f.Close)
			key := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
			return map[string]string{"PGINBOX_PROVIDERS": "gh=github", "PGINBOX_SECRET_GH": strings.Repeat("g", 32),
					"PGINBOX_API_URL_GH": f.URL, "PGINBOX_GITHUB_APP_ID_GH": "77", "PGINBOX_API_KEY_GH": key},
				func(_ *pgxpool.Pool, at time.Time, n int) {
					for i := range n {
						f.Add(githubfake.Delivery{ID: int64(i + 1), GUID: fmt.Sprintf("guid-lost-%02d", i), DeliveredAt: at,
							Event: "issues", Action: "opened", StatusCode: 502,
							Payload: json.RawMessage(fmt.Sprintf(`{"action": "opened", "issue": {"number": %d}}`, i))})
					}
				}
		}},
	{name: "paddle", provider: "paddle", log: true, lost: 24, failures: 1,
		start: func(t *testing.T, down *atomic.Bool) (map[string]string, func(*pgxpool.Pool, time.Time, int)) {
			f := paddlefake.New("pdl_apikey_events_read")
			f.Fail = failWhile(down)
			t.Cleanup(f.Close)
			return map[string]string{"PGINBOX_PROVIDERS": "paddle=paddle", "PGINBOX_SECRET_PADDLE": "pdl_ntfset_01outage_drill_0123",
					"PGINBOX_API_URL_PADDLE": f.URL, "PGINBOX_API_KEY_PADDLE": "pdl_apikey_events_read"},
				func(_ *pgxpool.Pool, at time.Time, n int) {
					for i := range n {
						f.Add(paddlefake.Event{ID: paddlefake.ID(at, i), Type: "transaction.completed", OccurredAt: at})
					}
				}
		}},
	// Sume: the lost deliveries are jobs whose webhooks never came, past
	// their deadline. Four of them (a pass asks four at a time): with more,
	// the one pass that gives up during the outage would retry each for 7.5 s.
	{name: "sume", provider: "sume", lost: 4, failures: 1,
		start: func(t *testing.T, down *atomic.Bool) (map[string]string, func(*pgxpool.Pool, time.Time, int)) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if down.Load() {
					http.Error(w, `{"error": "unavailable"}`, http.StatusServiceUnavailable)
					return
				}
				if r.Header.Get("Authorization") != "Bearer sume-api-key" {
					http.Error(w, "no", http.StatusUnauthorized)
					return
				}
				id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/jobs/"), "/status")
				fmt.Fprintf(w, `{"job_id": %q, "status": "COMPLETED"}`, id)
			}))
			t.Cleanup(api.Close)
			return map[string]string{"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
					"PGINBOX_API_URL_SUME": api.URL, "PGINBOX_API_KEY_SUME": "sume-api-key"},
				func(pool *pgxpool.Pool, _ time.Time, n int) {
					for i := range n {
						execSQL(t, pool, `SELECT webhooks.expect('sume', $1, now() - interval '1 minute')`, fmt.Sprintf("job_lost_%02d", i))
					}
				}
		}},
}

// TestRecoveryAfterAPIOutage is the outage drill, for every kind with an
// event log or a status API, against a real runner with a 2 s pass interval:
// the provider's API answers 503 to everything for at least 8 s while
// deliveries are lost, long enough for a backfill pass (or three) to give
// up; then it answers again. Every lost delivery must be stored within two
// pass intervals of that moment (plus outageNoise for the machine): a
// backed-off provider is probed every pass interval and read at once when
// it answers. While the API is down, the pass cut short leaves the
// checkpoint where it was. Before the probe, the first pass after the
// outage waited out a fixed 1-minute backoff.
func TestRecoveryAfterAPIOutage(t *testing.T) {
	t.Parallel()
	for _, k := range outageKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			var down atomic.Bool
			env, lose := k.start(t, &down)
			env["PGINBOX_BACKFILL_LOOKBACK"] = "1h"
			cfg, err := runner.ConfigFromEnv(func(v string) string { return env[v] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.ReconcileEvery = outagePass
			srv := startServer(t, conf.URL(), cfg, nil)

			var readUntil time.Time
			if k.log {
				waitFor(t, outagePass+30*time.Second, "a first complete pass", func() bool {
					return queryInt(t, pool, `SELECT count(*) FROM webhooks.backfill_checkpoints WHERE provider = $1 AND last_error IS NULL`, k.provider) == 1
				})
				if err := pool.QueryRow(t.Context(), `SELECT read_until FROM webhooks.backfill_checkpoints WHERE provider = $1`, k.provider).Scan(&readUntil); err != nil {
					t.Fatal(err)
				}
			}

			down.Store(true)
			wentDown := time.Now()
			// Created before the outage, past the 30 s lag a pass leaves to
			// webhooks in flight: what the pass after the outage must read.
			lose(pool, wentDown.Add(-45*time.Second), k.lost)
			waitFor(t, 90*time.Second+time.Duration(8*k.failures)*outagePass, fmt.Sprintf("%d passes giving up during the outage", k.failures), func() bool {
				if k.log {
					return metricValue(t, srv.Admin, "pginbox_backfill_log_passes_total", fmt.Sprintf(`provider=%q,result="api_error"`, k.provider)) >= int64(k.failures)
				}
				return metricValue(t, srv.Admin, "pginbox_backfill_total", `outcome="failed"`) >= int64(k.failures*k.lost)
			})
			time.Sleep(time.Until(wentDown.Add(8 * time.Second)))
			if k.log {
				var until time.Time
				var lastError *string
				if err := pool.QueryRow(t.Context(), `SELECT read_until, last_error FROM webhooks.backfill_checkpoints WHERE provider = $1`,
					k.provider).Scan(&until, &lastError); err != nil {
					t.Fatal(err)
				}
				if !until.Equal(readUntil) || lastError == nil {
					t.Fatalf("during the outage: read_until %s (before: %s), last_error %v; want it unmoved and the error recorded", until, readUntil, lastError)
				}
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, k.provider); n != 0 {
				t.Fatalf("%d events stored while the API was down", n)
			}

			down.Store(false)
			back := time.Now()
			outage := back.Sub(wentDown)
			deadline := back.Add(90 * time.Second)
			for queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1 AND source = 'backfill'`, k.provider) < int64(k.lost) {
				if time.Now().After(deadline) {
					t.Fatalf("after a %.1f s outage, not every lost delivery was recovered 90 s after the API answered again", outage.Seconds())
				}
				time.Sleep(20 * time.Millisecond)
			}
			took := time.Since(back)
			t.Logf("%s: API down %.1f s (%d passes gave up), %d lost deliveries recovered %.1f s after it answered again (pass interval %s)",
				k.name, outage.Seconds(), k.failures, k.lost, took.Seconds(), outagePass)
			if bound := 2*outagePass + outageNoise; took > bound {
				t.Fatalf("recovered %.1f s after the API answered again, want within two pass intervals (%s, with %s for the machine)",
					took.Seconds(), 2*outagePass, outageNoise)
			}
		})
	}
}

// TestServeBackfillHonoursRetryAfter: an event log answering 429 with a
// Retry-After longer than a pass's retry cap (30 s) is asked nothing more,
// neither by a pass nor by a probe, until the Retry-After has passed,
// however short the pass interval the backoff starts from (300 ms here,
// with a probe due every 300 ms).
func TestServeBackfillHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	f := stripefake.New("rk_test_read_events")
	f.Fail = func(int, *http.Request) (int, string) { return http.StatusTooManyRequests, "3600" }
	defer f.Close()
	env := map[string]string{"PGINBOX_PROVIDERS": "stripe=stripe", "PGINBOX_SECRET_STRIPE": "whsec_outage_drill_0123",
		"PGINBOX_API_URL_STRIPE": f.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_read_events"}
	cfg, err := runner.ConfigFromEnv(func(v string) string { return env[v] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 300 * time.Millisecond
	startServer(t, conf.URL(), cfg, nil)
	waitFor(t, 20*time.Second, "the first request", func() bool { return f.Requests() >= 1 })
	time.Sleep(4 * time.Second)
	if n := f.Requests(); n != 1 {
		t.Fatalf("%d requests within 4 s of a 429 with Retry-After: 3600, want 1", n)
	}
}
