package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
