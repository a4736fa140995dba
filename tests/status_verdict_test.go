package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// statusVerdict reads GET /api/status's verdict and retrying count, and the
// overview page's HTML.
func statusVerdict(t *testing.T, admin string) (verdict string, retrying int64, page string) {
	t.Helper()
	resp, err := http.Get(admin + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Verdict  *string  `json:"verdict"`
		Retrying *int64   `json:"retrying"`
		Errors   []string `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Verdict == nil || st.Retrying == nil {
		t.Fatalf("/api/status has no verdict or no retrying (%v, %v)", st.Verdict, st.Retrying)
	}
	if len(st.Errors) > 0 {
		t.Fatalf("sections unavailable: %v", st.Errors)
	}
	return *st.Verdict, *st.Retrying, httpGet(t, admin+"/")
}

// runChecksNow runs every check once (after the server started) and returns
// the breached ones.
func runChecksNow(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	execSQL(t, pool, `SELECT webhooks.refresh_views()`)
	rows, err := pool.Query(context.Background(), `SELECT name FROM webhooks.run_checks() WHERE NOT ok ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestStatusVerdict: /api/status's verdict and retrying in each state,
// seeded in a real database, and the overview never green unless the
// verdict is ok: no_data until the checks ran since the start (before: "All
// checks ok" while every check read "no data"), attention while events fail
// and wait for their retry (before: "All checks ok · oldest pending 0s"),
// breach when a check is breached, ok otherwise.
func TestStatusVerdict(t *testing.T) {
	t.Parallel()
	const green = `class="verdict ok"`
	t.Run("no_data", func(t *testing.T) {
		t.Parallel()
		conf := NewConfig(t)
		pool := PoolFor(t, conf.URL(), 2)
		traffic(t, pool, "sume", "job_ok_", 5)
		srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
		verdict, retrying, page := statusVerdict(t, srv.Admin)
		if verdict != "no_data" || retrying != 0 {
			t.Fatalf("verdict %q, retrying %d; want no_data, 0", verdict, retrying)
		}
		if strings.Contains(page, green) || !strings.Contains(page, `class="verdict nodata" id="verdict" data-verdict="no_data"><h1>No data yet</h1>`) {
			t.Fatalf("the overview does not say no data yet, or is green:\n%s", verdictHTML(page))
		}
	})
	t.Run("attention", func(t *testing.T) {
		t.Parallel()
		conf := NewConfig(t)
		pool := PoolFor(t, conf.URL(), 2)
		traffic(t, pool, "sume", "job_ok_", 5)
		reconcilePass(t, pool)
		srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
		// Two events failing in a loop, waiting out their backoff.
		for _, key := range []string{"job_fail_1", "job_fail_2"} {
			id, _ := ingest(t, pool, "sume", key, "job.completed", `{"status": "COMPLETED"}`)
			c := claim(t, pool, "w", 1, "1 minute")
			execSQL(t, pool, `SELECT webhooks.fail($1, 'w', $2, 'handler exploded')`, id, c[0].Attempts)
			execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() + interval '10 minutes' WHERE id = $1`, id)
		}
		if b := runChecksNow(t, pool); len(b) > 0 {
			t.Fatalf("two events retrying breached %v: seed another state", b)
		}
		verdict, retrying, page := statusVerdict(t, srv.Admin)
		if verdict != "attention" || retrying != 2 {
			t.Fatalf("verdict %q, retrying %d; want attention, 2", verdict, retrying)
		}
		if strings.Contains(page, green) || !strings.Contains(page, `class="verdict warn" id="verdict" data-verdict="attention"><h1 id="retrying">2 events failing, next retry in `) {
			t.Fatalf("the overview does not say 2 events failing, or is green:\n%s", verdictHTML(page))
		}
	})
	t.Run("breach", func(t *testing.T) {
		t.Parallel()
		conf := NewConfig(t)
		srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
		seedStatus(t, conf.URL()) // a dead event, checks run after the start
		verdict, _, page := statusVerdict(t, srv.Admin)
		if verdict != "breach" {
			t.Fatalf("verdict %q, want breach", verdict)
		}
		if strings.Contains(page, green) || !strings.Contains(page, `class="verdict bad" id="verdict" data-verdict="breach"`) {
			t.Fatalf("the overview is not red:\n%s", verdictHTML(page))
		}
	})
	t.Run("ok", func(t *testing.T) {
		t.Parallel()
		conf := NewConfig(t)
		pool := PoolFor(t, conf.URL(), 2)
		traffic(t, pool, "sume", "job_ok_", 5)
		reconcilePass(t, pool)
		srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
		if b := runChecksNow(t, pool); len(b) > 0 {
			t.Fatalf("processed traffic breached %v", b)
		}
		verdict, retrying, page := statusVerdict(t, srv.Admin)
		if verdict != "ok" || retrying != 0 {
			t.Fatalf("verdict %q, retrying %d; want ok, 0", verdict, retrying)
		}
		if !strings.Contains(page, green+` id="verdict" data-verdict="ok"><h1>All checks ok</h1>`) {
			t.Fatalf("the overview is not green:\n%s", verdictHTML(page))
		}
	})
}

// verdictHTML is the overview's verdict box, for a failure message.
func verdictHTML(page string) string {
	i := strings.Index(page, `id="verdict"`)
	if i < 0 {
		return "(no verdict box)"
	}
	return page[max(0, i-40):min(len(page), i+400)]
}

// TestEventPageSaysWhoItWaitsFor: on a runner with PGINBOX_HANDLER=none, a
// due event nothing claimed says "waiting for a worker:
// PGINBOX_HANDLER=none" (before: "next run 10.8s ago"); one still in its
// backoff says when it runs.
func TestEventPageSaysWhoItWaitsFor(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly) // no handler: none
	due, _ := ingest(t, pool, "sume", "job_waiting", "job.completed", `{"status": "COMPLETED"}`)
	later, _ := ingest(t, pool, "sume", "job_later", "job.completed", `{"status": "COMPLETED"}`)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() + interval '10 minutes' WHERE id = $1`, later)
	page := httpGet(t, srv.Admin+"/events/"+itoa64(due))
	if !strings.Contains(page, `<span id="next-run">waiting for a worker: PGINBOX_HANDLER=none</span>`) || strings.Contains(page, " ago</span>") {
		t.Fatalf("a due event on a runner without a handler:\n%s", around(page, "attempts"))
	}
	page = httpGet(t, srv.Admin+"/events/"+itoa64(later))
	if !strings.Contains(page, `<span id="next-run">next run in 9m`) {
		t.Fatalf("an event in its backoff:\n%s", around(page, "attempts"))
	}
}

// around is page near the first s, for a failure message.
func around(page, s string) string {
	i := strings.Index(page, s)
	if i < 0 {
		return "(no " + s + ")"
	}
	return page[i:min(len(page), i+300)]
}
