package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/runner"
)

// TestServeThroughPgBouncer: `pginbox serve` with DATABASE_URL pointing at a
// real PgBouncer in transaction mode (four server connections for every
// client, stock settings, nothing added to the URL) ingests signed
// deliveries, runs the sql: handler exactly once per event (one of them
// outlives its lease, so only heartbeats keep it), and runs its schedules:
// reconcile with the backfill pass after it, view refresh + checks, prune.
// Without PGINBOX_DIRECT_URL it polls instead of listening.
func TestServeThroughPgBouncer(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	execSQL(t, pool, sideTableSQL)
	bouncer := pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 4})
	pooled := bouncer.Via(conf.URL())
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "job_done") {
			fmt.Fprint(w, `{"job_id": "job_done", "status": "COMPLETED"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer api.Close()
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'job_done', now() - interval '1 minute')`)
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'job_unknown', now() - interval '1 minute')`)
	p := startRunner(t, map[string]string{
		"DATABASE_URL":            pooled,
		"PGINBOX_PROVIDERS":       "sume=sume",
		"PGINBOX_SECRET_SUME":     sumeSecret,
		"PGINBOX_API_URL_SUME":    api.URL,
		"PGINBOX_API_KEY_SUME":    "k",
		"PGINBOX_HANDLER":         sideTableHandler,
		"PGINBOX_WORKERS":         "4",
		"PGINBOX_BATCH":           "10",
		"PGINBOX_LEASE":           "2s",
		"PGINBOX_RECONCILE_EVERY": "500ms",
		"PGINBOX_CHECKS_EVERY":    "1s",
		"PGINBOX_PRUNE_EVERY":     "1s",
		"PGINBOX_LOG_LEVEL":       "debug",
	})
	client := &http.Client{Timeout: 10 * time.Second}
	const n = 150
	for i := 0; i < n; i++ {
		for rep := 0; rep < 2; rep++ {
			if status, _ := deliver(client, p.Base, fmt.Sprintf("job_%03d", i)); status != 200 {
				t.Fatalf("delivery %d through PgBouncer: %d\n%s", i, status, p.Logs())
			}
		}
	}
	// One event outlives its 2 s lease: only heartbeats keep it.
	slow := `{"job_id": "job_slow", "event": "job.completed", "sleep": 3}`
	if status, out := post(t, client, p.Base+"/webhooks/sume", signSume(sumeSecret, slow, time.Now()), []byte(slow)); status != 200 {
		t.Fatalf("slow delivery: %d %v", status, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed' AND source = 'webhook'`) != n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("not every event processed through PgBouncer within 60s: %d of %d\n%s", queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed' AND source = 'webhook'`), n+1, p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, "the backfilled event processed too", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
	})
	if got, want := queryInt(t, pool, `SELECT count(DISTINCT event_id) FROM app.seen`), queryInt(t, pool, `SELECT count(*) FROM app.seen`); got != want || got != n+1+1 {
		var twice string
		_ = pool.QueryRow(context.Background(), `SELECT string_agg(s.external_id || ' x' || s.c || ' attempts ' || e.attempts || ' ' || s.at, ', ')
			FROM (SELECT external_id, count(*) c, string_agg(at::text, ' / ') at FROM app.seen GROUP BY 1 HAVING count(*) > 1) s
			JOIN webhooks.events e USING (external_id)`).Scan(&twice)
		t.Fatalf("handler runs %d for %d events, want %d (each event once, the backfilled one too); twice: %s\n%s", want, got, n+2, twice, p.Logs())
	}
	if got := queryInt(t, pool, `SELECT attempts FROM webhooks.events WHERE external_id = 'job_slow'`); got != 1 {
		t.Fatalf("the slow event ran %d times: heartbeats did not hold its lease", got)
	}
	waitFor(t, 30*time.Second, "reconcile + backfill, checks and prune through PgBouncer", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) > 0 &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'job_done' AND source = 'backfill'`) == 1 &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones WHERE external_id = 'job_unknown'`) == 1 &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results`) > 0 &&
			logLine(p.Logs(), "scheduled job done", `"job":"prune"`) &&
			logLine(p.Logs(), "scheduled job done", `"job":"checks"`)
	})
	logs := p.Logs()
	for _, bad := range []string{"42P05", "26000", "unsupported startup parameter", `"level":"ERROR"`, "scheduled job failed"} {
		if strings.Contains(logs, bad) {
			t.Errorf("log mentions %s:\n%s", bad, logs)
		}
	}
	if !strings.Contains(logs, "transaction pooler") {
		t.Errorf("the runner did not notice the transaction pooler:\n%s", logs)
	}
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestHandlersThroughPgBouncer: the Go and http: handlers through
// PgBouncer in transaction mode, each event handled once.
func TestHandlersThroughPgBouncer(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
	}))
	defer app.Close()
	httpH, err := runner.ParseHandler("http:"+app.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var goRuns atomic.Int64
	goH := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		goRuns.Add(1)
		_, err := tx.Exec(ctx, `SELECT $1::bigint`, ev.ID) // a statement in the handler's own transaction
		return err
	})
	for _, tc := range []struct {
		name  string
		h     runner.Handler
		count func() int64
	}{{"go", goH, goRuns.Load}, {"http", httpH, hits.Load}} {
		t.Run(tc.name, func(t *testing.T) {
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			bouncer := pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 3})
			srv := startServer(t, bouncer.Via(conf.URL()), runner.Config{Handler: tc.h, Workers: 4, BatchSize: 8, PollInterval: 100 * time.Millisecond}, sumeOnly)
			client := &http.Client{Timeout: 10 * time.Second}
			const n = 60
			for i := 0; i < n; i++ {
				if status, _ := deliver(client, srv.Base, fmt.Sprintf("job_%s_%d", tc.name, i)); status != 200 {
					t.Fatalf("delivery %d: %d", i, status)
				}
			}
			waitFor(t, 30*time.Second, "every event processed", func() bool {
				return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == n
			})
			if got := tc.count(); got != n {
				t.Fatalf("handler ran %d times for %d events", got, n)
			}
		})
	}
}

// TestCLIThroughPgBouncer: every command but migrate works with
// DATABASE_URL at PgBouncer in transaction mode; migrate refuses there with
// a message saying why, and works with PGINBOX_DIRECT_URL.
func TestCLIThroughPgBouncer(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	bouncer := pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 2})
	pooled := bouncer.Via(conf.URL())
	id, _ := ingest(t, pool, "sume", "job_1", "job.completed", `{}`)
	processAll(t, pool, "w")
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'job_gap', now() - interval '1 minute')`)
	run := func(env []string, args ...string) (int, string) {
		cmd := exec.Command(pginboxBinary(t), args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/tmp", "PGINBOX_PROVIDERS=sume=sume", "PGINBOX_SECRET_SUME=" + sumeSecret}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	viaPooler := []string{"DATABASE_URL=" + pooled}
	for _, c := range []struct {
		args  []string
		codes []int // accepted exit codes
		want  string
	}{
		{[]string{"reconcile"}, []int{0}, `"skipped"`},
		{[]string{"checks", "--json"}, []int{0, 1}, `"name"`},
		{[]string{"gaps", "--json"}, []int{0}, "job_gap"},
		{[]string{"gaps", "--backfill"}, []int{0}, ""},
		{[]string{"replay", fmt.Sprint(id), "--reason", "pooler test"}, []int{0}, ""},
		{[]string{"prune"}, []int{0}, ""},
		{[]string{"version"}, []int{0}, "database schema version"},
	} {
		code, out := run(viaPooler, c.args...)
		ok := false
		for _, w := range c.codes {
			ok = ok || code == w
		}
		if !ok || !strings.Contains(out, c.want) || strings.Contains(out, "SQLSTATE") {
			t.Errorf("pginbox %s through PgBouncer: exit %d\n%s", strings.Join(c.args, " "), code, out)
		}
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE reason = 'pooler test'`); got != 1 {
		t.Errorf("replay through PgBouncer recorded %d replays", got)
	}
	code, out := run(viaPooler, "migrate")
	if code != 1 || !strings.Contains(out, "transaction pooler") || !strings.Contains(out, "PGINBOX_DIRECT_URL") {
		t.Errorf("migrate through PgBouncer: exit %d, want 1 with a message naming the pooler and PGINBOX_DIRECT_URL:\n%s", code, out)
	}
	if code, out := run(append(viaPooler, "PGINBOX_DIRECT_URL="+conf.URL()), "migrate"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("migrate with PGINBOX_DIRECT_URL: exit %d\n%s", code, out)
	}
	if code, out := run([]string{"DATABASE_URL=" + conf.URL()}, "migrate"); code != 0 {
		t.Errorf("migrate on a direct connection: exit %d\n%s", code, out)
	}
}

// logLine reports whether one line of logs contains every part.
func logLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestTransactionPoolerDetected: the probe pginbox runs before migrating
// or listening tells PgBouncer in transaction mode (with one server
// connection or several) from a direct connection and from a session-mode
// pooler, where session state does hold.
func TestTransactionPoolerDetected(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		url  func() string
		want bool
	}{
		{"direct", func() string { return conf.URL() }, false},
		{"pgbouncer transaction, pool 1", func() string {
			return pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 1}).Via(conf.URL())
		}, true},
		{"pgbouncer transaction, pool 8", func() string {
			return pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 8}).Via(conf.URL())
		}, true},
		{"pgbouncer session", func() string {
			return pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 8, SessionMode: true}).Via(conf.URL())
		}, false},
	} {
		got, err := database.TransactionPooled(ctx, tc.url())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: transaction pooler %v, want %v", tc.name, got, tc.want)
		}
	}
}
