package backfill

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// attacker is an HTTP server that is not the provider's API: it records every
// request (and the Authorization it carried) and answers with body.
type attacker struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newAttacker(t *testing.T, status int, body string) *attacker {
	t.Helper()
	a := &attacker{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auths = append(a.auths, r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *attacker) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auths...)
}

// TestAttacksOnBackfillOrigins performs each way whoever can call
// webhooks.expect() could steer backfill to a host of their own, and checks
// that the attacker's host never sees a request, nothing it says is stored,
// and the gap stays open.
func TestAttacksOnBackfillOrigins(t *testing.T) {
	t.Parallel()
	completed := `{"job_id": "job_1", "status": "COMPLETED", "output": {"url": "s3://attacker"}}`
	cases := []struct {
		name string
		// setup returns the attacker, the environment, the configured
		// providers and the gap's provider and status_url.
		attackStatus int
		attackBody   string
		apiURL       bool // PGINBOX_API_URL_SUME points at the real (fake) API
		redirect     bool // the real API redirects to the attacker
		provider     string
		refused      string // the reason the pass counts, "" = none (never asked)
	}{
		{name: "key sent to a status_url host when no API URL is set", attackStatus: 200,
			attackBody: `{"job_id": "job_1", "status": "IN_PROGRESS"}`, provider: "sume"},
		{name: "foreign answer COMPLETED stored", attackStatus: 200, attackBody: completed, apiURL: true, provider: "sume", refused: RefusedForeignOrigin},
		{name: "foreign 404 tombstones a real gap", attackStatus: 404, attackBody: `{}`, apiURL: true, provider: "sume",
			refused: RefusedForeignOrigin},
		{name: "redirect to another port followed with Authorization", attackStatus: 200, attackBody: completed,
			apiURL: true, redirect: true, provider: "sume", refused: RefusedRedirect},
		{name: "provider without URL contacted via fallback", attackStatus: 200, attackBody: completed, provider: "legacy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t, 4)
			evil := newAttacker(t, tc.attackStatus, tc.attackBody)
			home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.redirect {
					http.Redirect(w, r, evil.URL+"/v1/jobs/job_1/status", http.StatusFound)
					return
				}
				http.Error(w, "not found", http.StatusNotFound)
			}))
			t.Cleanup(home.Close)
			env := map[string]string{"PGINBOX_API_KEY_SUME": "sk_live_secret", "PGINBOX_API_KEY_LEGACY": "legacy-secret"}
			if tc.apiURL {
				env["PGINBOX_API_URL_SUME"] = home.URL
			}
			statusURL := evil.URL + "/v1/jobs/job_1/status"
			if tc.redirect {
				statusURL = "" // the gap asks the real API, which redirects
			}
			dbExec(t, pool, `SELECT webhooks.expect($1, 'job_1', now() - interval '1 minute', nullif($2, ''))`, tc.provider, statusURL)
			apis, err := APIs(map[string]string{"sume": "sume"}, envconfig.Endpoints(func(k string) string { return env[k] }))
			if err != nil {
				t.Fatal(err)
			}
			report, err := Run(context.Background(), pool, apis, fastOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused != "" && (report.Refused != 1 || report.RefusedBy["sume"][tc.refused] != 1) {
				t.Errorf("report %+v, want one refusal %q for sume", report, tc.refused)
			}
			if got := evil.requests(); len(got) != 0 {
				t.Errorf("the attacker's host got %d requests (Authorization %q)", len(got), got)
			}
			if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
				t.Errorf("%d events stored from the attacker's answer", n)
			}
			if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.tombstones`); n != 0 {
				t.Errorf("the gap was tombstoned on the attacker's word")
			}
			if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.find_gaps() WHERE external_id = 'job_1'`); n != 1 {
				t.Errorf("the gap is no longer open")
			}
		})
	}
}

// TestBackfillHungAPI: an API that never answers costs one pass up to its
// deadline, then is backed off (exponentially, capped) instead of being
// asked on every pass; the first answer ends the backoff.
func TestBackfillHungAPI(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	var hang atomic.Bool
	hang.Store(true)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte(`{"job_id": "job_1", "status": "IN_PROGRESS"}`))
	}))
	defer srv.Close()
	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_1', now() - interval '1 minute')`)
	apis := map[string]StatusAPI{"sume": mustSume(t, "sume", srv.URL, "k")}
	backoff := NewBackoff(time.Hour, 4*time.Hour)
	opts := fastOptions(nil)
	opts.RequestTimeout = time.Minute
	opts.PassTimeout = 300 * time.Millisecond
	opts.Backoff = backoff

	start := time.Now()
	_, err := Run(context.Background(), pool, apis, opts)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("pass against a hung API: %v after %s, want its deadline error after ~300ms", err, took)
	}
	until := backoff.Until("sume")
	if d := time.Until(until); d < 50*time.Minute || d > time.Hour {
		t.Fatalf("backoff until %s (in %s), want ~1h", until, d)
	}
	report, err := Run(context.Background(), pool, apis, opts)
	if err != nil || report.BackedOff != 1 || report.Requests != 0 {
		t.Fatalf("second pass: %+v, %v; want the gap backed off, no request", report, err)
	}
	backoff.now = func() time.Time { return until.Add(time.Second) }
	backoff.mu.Lock()
	backoff.state["sume"].until = time.Now()
	backoff.mu.Unlock()
	if _, err := Run(context.Background(), pool, apis, opts); err == nil {
		t.Fatal("third pass: no deadline error")
	}
	if d := backoff.Until("sume").Sub(until.Add(time.Second)); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Fatalf("second backoff %s, want 2h (doubled)", d)
	}
	for range 5 {
		backoff.fail("sume")
	}
	if d := backoff.Until("sume").Sub(until.Add(time.Second)); d != 4*time.Hour {
		t.Fatalf("backoff %s, want capped at 4h", d)
	}
	hang.Store(false)
	backoff.mu.Lock()
	backoff.state["sume"].until = time.Now()
	backoff.mu.Unlock()
	if report, err := Run(context.Background(), pool, apis, opts); err != nil || report.Postponed != 1 {
		t.Fatalf("pass once the API answers: %+v, %v", report, err)
	}
	if !backoff.Until("sume").IsZero() {
		t.Fatal("an answer did not end the backoff")
	}
}
