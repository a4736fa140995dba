package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/runner"
)

// TestPostgresRestartAndConnectionLoss: under a steady signed load, first
// every backend of the runner (listener, workers, ingest pool) is terminated,
// then Postgres itself is restarted. While the database is gone the runner
// answers 503 (never 2xx); it recovers by itself, the listener reconnects,
// and nothing acknowledged is lost or processed twice.
//
// The same runs with DATABASE_URL at a PgBouncer in transaction mode (and
// PGINBOX_DIRECT_URL for the listener), in front of the restarted server.
func TestPostgresRestartAndConnectionLoss(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	for _, via := range []string{"direct", "pgbouncer"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			postgresRestartAndConnectionLoss(t, via == "pgbouncer")
		})
	}
}

func postgresRestartAndConnectionLoss(t *testing.T, pooled bool) {
	ctx := context.Background()
	c, err := StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopMode(context.Background(), "immediate"); _ = c.Remove() })
	url := c.URL("postgres")
	pool := PoolFor(t, url, 4)
	db := stdlib.OpenDBFromPool(pool)
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h := sideTable(t, pool)
	dbURL, direct := url, ""
	if pooled {
		b, err := pgtest.StartPgBouncer(ctx, "127.0.0.1", strconv.Itoa(c.Port), pgtest.PgBouncerOptions{PoolSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Remove() })
		dbURL, direct = b.Via(url), url
	}
	srv := startServer(t, dbURL, runner.Config{
		DirectURL: direct,
		Handler:   h, Workers: 4, BatchSize: 20, Lease: 2 * time.Second,
		ReconcileEvery: 500 * time.Millisecond, PollInterval: 200 * time.Millisecond,
		IngestTimeout: 2 * time.Second, ListenPing: time.Second,
	}, sumeOnly)

	var acked sync.Map
	var ok2xx, down503, downOther atomic.Int64
	// The window in which the server was certainly down: from the end of
	// the stop to the start of the restart (unix ns; 0 = not yet).
	var downFrom, downTo atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	var next atomic.Int64
	for s := 0; s < 4; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("job_%05d", next.Add(1))
				body := sampleBody("sume", key)
				for attempt := 0; ; attempt++ {
					req, _ := http.NewRequest(http.MethodPost, srv.Base+"/webhooks/sume", stringsReader(body))
					req.Header = signSume(sumeSecret, body, time.Now())
					req.Header.Set("Content-Type", "application/json")
					sent := time.Now().UnixNano()
					resp, err := client.Do(req)
					answered := time.Now().UnixNano()
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 200 {
							if from, to := downFrom.Load(), downTo.Load(); from != 0 && sent > from && (to == 0 || answered < to) {
								t.Errorf("2xx for %s while the database was down", key)
							}
							ok2xx.Add(1)
							acked.Store(key, true)
							break
						}
						if resp.StatusCode == 503 {
							down503.Add(1)
						} else {
							downOther.Add(1)
						}
					}
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		}()
	}

	time.Sleep(time.Second)
	// Connection loss: every backend of the runner.
	super := PoolFor(t, url, 2)
	terminated := queryInt(t, super, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'pginbox-%' AND pid <> pg_backend_pid()`)
	time.Sleep(1500 * time.Millisecond)
	// Postgres restart.
	if err := c.StopMode(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	downFrom.Store(time.Now().UnixNano())
	time.Sleep(1500 * time.Millisecond)
	downTo.Store(time.Now().UnixNano())
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()

	n := int64(0)
	acked.Range(func(any, any) bool { n++; return true })
	waitFor(t, 60*time.Second, "every acknowledged event processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) >= n
	})
	lost := int64(0)
	acked.Range(func(k, _ any) bool {
		if queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = $1`, k) != 1 {
			lost++
		}
		return true
	})
	doubled := queryInt(t, pool, `SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM app.seen GROUP BY event_id) x`)
	connects := metricValue(t, srv.Admin, "pginbox_listener_connects_total")
	t.Logf("terminated %d backends; acknowledged %d, 503s %d, other errors %d; lost %d, doubled %d, listener connects %d",
		terminated, n, down503.Load(), downOther.Load(), lost, doubled, connects)
	if terminated < 3 {
		t.Errorf("terminated only %d runner backends", terminated)
	}
	if down503.Load() == 0 {
		t.Error("no 503 while the database was down: the outage was not exercised")
	}
	if lost != 0 || doubled != 0 {
		t.Fatalf("lost %d, doubled %d", lost, doubled)
	}
	if connects < 2 {
		t.Fatalf("listener connects %d: it did not reconnect", connects)
	}
}
