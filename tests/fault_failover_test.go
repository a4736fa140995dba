package tests

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/runner"
)

// TestPrimaryFailover: a primary with a synchronous streaming standby
// (pg_basebackup -R, synchronous_standby_names = '*'); pginbox's
// DATABASE_URL lists both hosts with target_session_attrs=read-write. Under
// a signed load with the sql: handler the primary is killed with SIGKILL and
// the standby promoted; pginbox is not restarted. Until the new primary
// takes writes every delivery is answered 503 (never 500, never a 2xx) well
// within the ingest timeout; then it resumes by itself (the time from
// promotion to the first 2xx is logged), the listener follows, every
// acknowledged delivery is on the new primary and every event ran once.
// /readyz of a server pointed at the standby alone answers 503.
func TestPrimaryFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	// make test-matrix runs other majors from server builds that ship no
	// pg_basebackup (and the system one refuses a newer server); make test
	// runs this test on the system PostgreSQL, which has it.
	if bin := os.Getenv("PGINBOX_PG_BINDIR"); bin != "" {
		if _, err := os.Stat(filepath.Join(bin, "pg_basebackup")); err != nil {
			t.Skipf("no pg_basebackup in PGINBOX_PG_BINDIR=%s: the failover test needs one of the server's major", bin)
		}
	}
	ctx := context.Background()
	primary, primaryURL := ownCluster(t, nil, true)
	setup := PoolFor(t, primaryURL, 2)
	execSQL(t, setup, sideTableSQL)
	dir, err := os.MkdirTemp("", "pginbox-test-standby-")
	if err != nil {
		t.Fatal(err)
	}
	standby, err := primary.BaseBackup(ctx, dir, localpg.TestSettings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.StopMode(context.Background(), "immediate"); _ = standby.Remove() })
	execSQL(t, setup, `ALTER SYSTEM SET synchronous_standby_names = '*'`)
	execSQL(t, setup, `SELECT pg_reload_conf()`)
	waitFor(t, 30*time.Second, "the standby streaming synchronously", func() bool {
		return queryInt(t, setup, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'`) == 1
	})
	setup.Close()

	// A server on the standby alone is not ready: it cannot take writes.
	onStandby := startServer(t, standby.URL("postgres"), runner.Config{SkipMigrate: true, PollOnly: true}, sumeOnly)
	if code := httpStatus(t, onStandby.Base+"/readyz"); code != 503 {
		t.Errorf("/readyz on a standby: %d, want 503", code)
	}
	onStandby.Stop(t)

	h, err := runner.ParseHandler(sideTableHandler, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, hostList(primary, standby), runner.Config{
		Handler: h, Workers: 4, BatchSize: 20, Lease: 3 * time.Second,
		ReconcileEvery: 500 * time.Millisecond, PollInterval: 200 * time.Millisecond, ListenPing: time.Second,
	}, sumeOnly)
	if code := httpStatus(t, srv.Base+"/readyz"); code != 200 {
		t.Fatalf("/readyz on the primary: %d", code)
	}
	load := startLoad(srv.Base, "failover", 4)
	time.Sleep(2 * time.Second)
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	time.Sleep(2 * time.Second) // the time an operator or orchestrator takes
	promoting := time.Now()
	if got := load.OKBetween(killed.Add(50*time.Millisecond), promoting); got != 0 {
		t.Errorf("%d deliveries answered 2xx with no primary", got)
	}
	if code := httpStatus(t, srv.Base+"/readyz"); code != 503 {
		t.Errorf("/readyz with no primary: %d, want 503", code)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	var resumed time.Time
	waitFor(t, 30*time.Second, "a 2xx from the new primary", func() bool {
		resumed = load.FirstOKAfter(promoting)
		return !resumed.IsZero()
	})
	time.Sleep(2 * time.Second)
	load.Stop()
	st := load.Statuses()
	resume := resumed.Sub(promoting)
	t.Logf("failover: pg_ctl promote -w took %v; first 2xx %v after the promotion began; answers %v; slowest non-2xx answer %v",
		promoted.Sub(promoting).Round(time.Millisecond), resume.Round(time.Millisecond), st, load.Slowest().Round(time.Millisecond))
	if resume > 5*time.Second {
		t.Errorf("took %v after the promotion to take writes again, want under 5 s", resume)
	}
	if st[503] == 0 {
		t.Error("no 503 during the failover: the outage was not exercised")
	}
	for code, n := range st {
		if code != 200 && code != 503 {
			t.Errorf("%d answers with status %d (want only 200 and 503)", n, code)
		}
	}
	if load.Slowest() > 5*time.Second {
		t.Errorf("a delivery waited %v for its 503", load.Slowest())
	}
	if code := httpStatus(t, srv.Base+"/readyz"); code != 200 {
		t.Errorf("/readyz on the new primary: %d", code)
	}
	pool := PoolFor(t, standby.URL("postgres"), 4)
	// The listener follows: a delivery is picked up by a NOTIFY wake-up
	// on the new primary (the poll is 200 ms, so count reconnects instead).
	waitFor(t, 20*time.Second, "the listener on the new primary", func() bool {
		return metricValue(t, srv.Admin, "pginbox_listener_connects_total") >= 2
	})
	auditExactlyOnce(t, pool, load.Acked(), 60*time.Second)
}

// httpStatus GETs url and returns the status (0 on a transport error).
func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
