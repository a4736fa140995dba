package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
)

// recoveryDB returns a migrated database's URL and a pool on it.
func recoveryDB(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.NewConfig(t).URL()
	return url, pgtest.PoolFor(t, url, 2)
}

// TestReconcileCommand: `pginbox reconcile` runs one pass and prints its JSON.
func TestReconcileCommand(t *testing.T) {
	t.Parallel()
	url, pool := recoveryDB(t)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('sume', 'j', now() - interval '1 minute')`)
	code, out, errOut := runCLI(t, map[string]string{"DATABASE_URL": url}, "reconcile")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Skipped bool   `json:"skipped"`
		RunID   int64  `json:"run_id"`
		Trigger string `json:"trigger"`
		Gaps    int64  `json:"gaps"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Skipped || r.RunID == 0 || r.Trigger != "cli" || r.Gaps != 1 {
		t.Fatalf("output %q (%v), want one pass by cli with 1 gap", out, err)
	}
	if code, _, errOut := runCLI(t, map[string]string{"DATABASE_URL": url}, "reconcile", "extra"); code != 2 ||
		!strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Fatalf("reconcile extra: exit %d, %q", code, errOut)
	}
}

// TestGapsCommand: `pginbox gaps` lists the gaps as a table or as JSON, and
// `--backfill` settles them through the provider's API.
func TestGapsCommand(t *testing.T) {
	t.Parallel()
	url, pool := recoveryDB(t)
	env := map[string]string{"DATABASE_URL": url}

	code, out, errOut := runCLI(t, env, "gaps")
	if code != 0 || out != "no gaps\n" {
		t.Fatalf("no gaps: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ = runCLI(t, env, "gaps", "--json"); code != 0 || out != "[]\n" {
		t.Fatalf("no gaps as JSON: exit %d, %q", code, out)
	}

	pgtest.Exec(t, pool, `SELECT webhooks.expect('sume', 'job_1', now() - interval '1 hour')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('sume', 'job_2', now() - interval '1 minute')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('other', 'x', now() - interval '2 minutes')`)
	code, out, errOut = runCLI(t, env, "gaps")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "PROVIDER") ||
		!strings.HasPrefix(lines[1], "sume      job_1") || lines[4] != "3 gaps" {
		t.Fatalf("table: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, env, "gaps", "--json", "--provider", "sume")
	var gaps []struct {
		Provider   string `json:"provider"`
		ExternalID string `json:"external_id"`
	}
	if err := json.Unmarshal([]byte(out), &gaps); code != 0 || err != nil || len(gaps) != 2 || gaps[0].ExternalID != "job_1" {
		t.Fatalf("json: exit %d, %q, %v", code, out, err)
	}
	if code, out, _ = runCLI(t, env, "gaps", "--limit", "1"); code != 0 || !strings.Contains(out, "1 gaps (the first 1") {
		t.Fatalf("--limit 1: exit %d, %q", code, out)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer k":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v1/jobs/job_1/status":
			w.Write([]byte(`{"job_id": "job_1", "status": "COMPLETED"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	env["PGINBOX_PROVIDERS"] = "sume=sume"
	env["PGINBOX_API_URL_SUME"] = srv.URL
	env["PGINBOX_API_KEY_SUME"] = "wrong"
	code, out, errOut = runCLI(t, env, "gaps", "--backfill", "--provider", "sume", "--json")
	// The pass ran, so it exits 0 whatever it could not fill; the refused key
	// is reported on stderr.
	if code != 0 || !strings.HasPrefix(errOut, "pginbox: backfill sume: the API refused the key (HTTP 401): check PGINBOX_API_KEY_SUME\n") ||
		!strings.Contains(out, `"tombstoned":0`) || strings.Contains(out, `"unauthorized":0`) {
		t.Fatalf("wrong key: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	env["PGINBOX_API_KEY_SUME"] = "k"
	code, out, errOut = runCLI(t, env, "gaps", "--backfill", "--provider", "sume")
	if code != 0 || !strings.Contains(out, "gaps 2: ingested 1, duplicates 0, tombstoned 1") {
		t.Fatalf("backfill: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, env, "gaps", "--json")
	if code != 0 || !strings.Contains(out, `"provider":"other"`) || strings.Contains(out, "job_") {
		t.Fatalf("after backfill: %q", out)
	}

	// A status_url on another origin is shown, never requested, and counted.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the foreign status_url was requested: %s", r.URL)
	}))
	defer evil.Close()
	pgtest.Exec(t, pool, `SELECT webhooks.expect('sume', 'job_3', now() - interval '1 minute', $1)`, evil.URL+"/steal")
	code, out, _ = runCLI(t, env, "gaps", "--provider", "sume")
	if code != 0 || !strings.Contains(out, "refused: foreign_origin") {
		t.Fatalf("listing a foreign status_url: exit %d\n%s", code, out)
	}
	code, out, errOut = runCLI(t, env, "gaps", "--backfill", "--provider", "sume")
	if code != 0 || !strings.Contains(out, "refused 1") || !strings.Contains(out, "refused sume: 1 foreign_origin") {
		t.Fatalf("backfill of a foreign status_url: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	env["PGINBOX_PROVIDERS"] = "sume"
	if code, _, errOut = runCLI(t, env, "gaps", "--backfill"); code != 1 || !strings.Contains(errOut, "is not name=kind") {
		t.Fatalf("bad PGINBOX_PROVIDERS: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, env, "gaps", "--limit", "0"); code != 2 {
		t.Fatalf("--limit 0: exit %d, %q", code, errOut)
	}
}

// TestGapsBackfillEventLog: `pginbox gaps --backfill` also reads the event
// log of a stripe provider with an API URL and prints what it recovered; a
// second run reads only the overlap.
func TestGapsBackfillEventLog(t *testing.T) {
	t.Parallel()
	url, pool := recoveryDB(t)
	f := stripefake.New("rk_test_cli")
	defer f.Close()
	for i := range 5 {
		f.Add(stripefake.Event{ID: fmt.Sprintf("evt_cli_%d", i), Type: "invoice.paid", Created: time.Now().Add(-time.Hour)})
	}
	env := map[string]string{"DATABASE_URL": url, "PGINBOX_PROVIDERS": "stripe=stripe",
		"PGINBOX_API_URL_STRIPE": f.URL, "PGINBOX_API_KEY_STRIPE": "rk_test_cli"}
	code, out, errOut := runCLI(t, env, "gaps", "--backfill")
	if code != 0 || !strings.Contains(out, "event log stripe from ") || !strings.Contains(out, "listed 5, recovered 5, duplicates 0, 1 pages (1 requests); complete") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.events WHERE source = 'backfill'`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("%d backfilled, %v", n, err)
	}
	code, out, _ = runCLI(t, env, "gaps", "--backfill", "--json")
	if code != 0 || !strings.Contains(out, `"event_logs":[{"provider":"stripe"`) || !strings.Contains(out, `"listed":0`) {
		t.Fatalf("second run: exit %d, %q", code, out)
	}
}
