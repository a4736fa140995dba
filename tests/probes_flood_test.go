package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// refuseConnections makes the test's database refuse new connections and
// ends the open ones, until the test ends.
func refuseConnections(t *testing.T, database string) {
	t.Helper()
	ctx := context.Background()
	super, err := pgx.Connect(ctx, SuperuserURL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	db := pgx.Identifier{database}.Sanitize()
	if _, err := super.Exec(ctx, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = super.Exec(ctx, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS true`)
		super.Close(ctx)
	})
	if _, err := super.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, database); err != nil {
		t.Fatal(err)
	}
}

// TestReadyzBodyNamesNoDatabaseDetail: with the database refusing
// connections, /readyz answers 503 on both listeners with a fixed word; the
// pgx error (user, database, host, port) goes to the log, not the body.
func TestReadyzBodyNamesNoDatabaseDetail(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	u, err := url.Parse(conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	refuseConnections(t, conf.Database)
	leaks := []string{conf.Database, u.User.Username(), u.Hostname(), ":" + u.Port(), "connect", "SQLSTATE", "database", "user="}
	for _, base := range []string{srv.Base, srv.Admin} {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s/readyz with the database refusing connections: %d %s", base, resp.StatusCode, body)
		}
		if strings.TrimSpace(string(body)) != `{"status":"not ready"}` {
			t.Errorf("%s/readyz body %q, want the fixed {\"status\":\"not ready\"}", base, body)
		}
		for _, leak := range leaks {
			if leak != "" && strings.Contains(string(body), leak) {
				t.Errorf("%s/readyz body names %q: %s", base, leak, body)
			}
		}
	}
}

// TestReadyzFloodDoesNotStarveClaims: 64 goroutines hammer /readyz on both
// listeners while events keep arriving; every event is still processed,
// every probe answers 200, and the probes never run more than one check at
// a time on the workers' connections (one check shared by all callers).
func TestReadyzFloodDoesNotStarveClaims(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	var handled atomic.Int64
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		handled.Add(1)
		return nil
	})
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: 100 * time.Millisecond}, sumeOnly)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, notOK atomic.Int64
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := []string{srv.Base, srv.Admin}[i%2]
			for ctx.Err() == nil {
				resp, err := client.Get(base + "/readyz")
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				} else if ctx.Err() == nil {
					notOK.Add(1)
				}
			}
		}()
	}
	// The readiness check's statements, running now on the workers' pool.
	const probing = `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-worker'
		AND datname = current_database() AND state = 'active'
		AND (query LIKE '%pg_is_in_recovery%' OR query LIKE '%goose_db_version%')`
	var maxProbing int64
	const n = 200
	deadline := time.Now().Add(4 * time.Second)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		ingest(t, pool, "sume", fmt.Sprintf("probe_flood_%d", i), "job.completed", `{}`)
		maxProbing = max(maxProbing, queryInt(t, pool, probing))
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, 20*time.Second, "every event processed during the probe flood", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
	})
	stop()
	wg.Wait()
	t.Logf("%d probes answered 200, %d not; %d events handled; at most %d checks at once on the workers' pool",
		ok.Load(), notOK.Load(), handled.Load(), maxProbing)
	if ok.Load() < 200 {
		t.Fatalf("only %d probes answered 200: the flood did not happen", ok.Load())
	}
	if notOK.Load() > 0 {
		t.Errorf("%d probes answered non-200 while the database was up", notOK.Load())
	}
	if maxProbing > 1 {
		t.Errorf("the probes ran %d checks at once on the workers' connections, want at most 1 (one shared check)", maxProbing)
	}
}

// TestMetricsScrapeLoopLeavesConsoleUsable: 40 goroutines scrape /metrics
// in a loop (as a misconfigured Prometheus or a DNS-rebinding page would);
// /metrics keeps answering with the queue gauges, and a token holder's
// console pages answer 200 with every section, because the scrapes share
// one read of the database gauges and so hold at most one of the console's
// two connections.
func TestMetricsScrapeLoopLeavesConsoleUsable(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	// Enough dead events that the count queries take some time.
	ingestMany(t, pool, "sume", "scrape_", "job.completed", 20000, "", "")
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'dead', attempts = 1, last_error = 'x' WHERE external_id LIKE 'scrape_%'`)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var scrapes, scrapesOK atomic.Int64
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 40}}
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := client.Get(srv.Admin + "/metrics")
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				scrapes.Add(1)
				if resp.StatusCode == 200 && strings.Contains(string(b), `pginbox_queue_depth{status="dead"} 20000`) {
					scrapesOK.Add(1)
				}
			}
		}()
	}
	// The scrapes' reads of the checks running now on the console's
	// connections (the console's own pages read the queue with the same
	// statement as /metrics, but never this one).
	const scraping = `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-admin'
		AND datname = current_database() AND state = 'active'
		AND query LIKE '%FROM webhooks.check_status WHERE enabled AND run_at%'`
	var maxScraping atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if n := queryInt(t, pool, scraping); n > maxScraping.Load() {
				maxScraping.Store(n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	var bad []string
	deadline := time.Now().Add(6 * time.Second)
	pages := 0
	for time.Now().Before(deadline) {
		for _, path := range []string{"/api/status", "/", "/api/events?status=dead&limit=5", "/events?status=dead"} {
			code, _, body := adminDo(t, nil, "GET", srv.Admin+path, testAdminToken, "", nil)
			pages++
			if code != 200 || strings.Contains(body, "unavailable") {
				bad = append(bad, fmt.Sprintf("GET %s: %d %.200s", path, code, body))
			}
		}
		time.Sleep(300 * time.Millisecond) // past the status page's own cache now and then
	}
	stop()
	wg.Wait()
	t.Logf("%d scrapes (%d with the queue gauges), %d console pages, %d not 200 or with a section unavailable; at most %d scrape reads at once on the console's connections",
		scrapes.Load(), scrapesOK.Load(), pages, len(bad), maxScraping.Load())
	if maxScraping.Load() > 1 {
		t.Errorf("the scrapes read the database on %d of the console's connections at once, want at most 1 (one shared read)", maxScraping.Load())
	}
	if scrapes.Load() < 100 {
		t.Fatalf("only %d scrapes: the loop did not happen", scrapes.Load())
	}
	if scrapesOK.Load()*2 < scrapes.Load() {
		t.Errorf("only %d of %d scrapes carried the queue gauges", scrapesOK.Load(), scrapes.Load())
	}
	if len(bad) > 0 {
		t.Errorf("console pages failed during the scrape loop:\n%s", strings.Join(bad, "\n"))
	}
}
