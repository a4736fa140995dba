package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestKillRunnerMidLoad: `pginbox serve` with the sql: handler is killed
// with SIGKILL several times while a provider-like sender delivers signed
// events with duplicates and retries (non-2xx or connection error → retry
// with a fresh signature). Afterwards every acknowledged key exists, the
// handler's side table shows exactly one run per event, and nothing is dead
// or stuck.
//
// The same runs with DATABASE_URL at a PgBouncer in transaction mode.
func TestKillRunnerMidLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	for _, via := range []string{"direct", "pgbouncer"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			killRunnerMidLoad(t, via == "pgbouncer")
		})
	}
}

func killRunnerMidLoad(t *testing.T, pooled bool) {
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	sideTable(t, pool)
	port, err := localpg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dbURL := conf.URL()
	if pooled {
		dbURL = pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 6}).Via(dbURL)
	}
	env := map[string]string{
		"DATABASE_URL":            dbURL,
		"PGINBOX_ADDR":            fmt.Sprintf("127.0.0.1:%d", port),
		"PGINBOX_PROVIDERS":       "sume=sume",
		"PGINBOX_SECRET_SUME":     sumeSecret,
		"PGINBOX_HANDLER":         sideTableHandler,
		"PGINBOX_WORKERS":         "4",
		"PGINBOX_BATCH":           "20",
		"PGINBOX_LEASE":           "2s",
		"PGINBOX_RECONCILE_EVERY": "500ms",
		"PGINBOX_POLL_INTERVAL":   "200ms",
		"PGINBOX_LOG_LEVEL":       "error",
	}
	var current atomic.Pointer[runnerProc]
	current.Store(startRunner(t, env))
	base := current.Load().Base

	const events, copies, senders = 400, 3, 8
	var acked sync.Map // key -> true once any delivery got a 2xx
	var deliveries, retries atomic.Int64
	ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
	defer stop()
	work := make(chan string, events*copies)
	order := rand.Perm(events * copies)
	for _, i := range order {
		work <- fmt.Sprintf("job_%04d", i%events)
	}
	close(work)
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range work {
				body := sampleBody("sume", key)
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/sume", stringsReader(body))
					req.Header = signSume(sumeSecret, body, time.Now())
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					deliveries.Add(1)
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode == 200 {
							acked.Store(key, true)
							break
						}
					}
					retries.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}

	kills := 0
	for kills < 4 {
		time.Sleep(time.Duration(700+rand.IntN(800)) * time.Millisecond)
		current.Load().Kill()
		kills++
		time.Sleep(200 * time.Millisecond)
		current.Store(startRunner(t, env))
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the sender did not finish within 90s")
	}

	n := 0
	acked.Range(func(any, any) bool { n++; return true })
	if n != events {
		t.Fatalf("acknowledged %d distinct keys, want %d", n, events)
	}
	waitFor(t, 60*time.Second, "every event processed after the kills", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == events
	})
	lost := int64(0)
	acked.Range(func(k, _ any) bool {
		if queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sume' AND external_id = $1`, k) != 1 {
			lost++
		}
		return true
	})
	doubled := queryInt(t, pool, `SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM app.seen GROUP BY event_id) x`)
	runs := queryInt(t, pool, `SELECT count(*) FROM app.seen`)
	stuck := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status IN ('dead', 'processing', 'pending')`)
	t.Logf("kills %d, deliveries %d (retries %d), events %d, lost %d, handler runs %d, doubled %d, dead/stuck %d",
		kills, deliveries.Load(), retries.Load(), events, lost, runs, doubled, stuck)
	if lost != 0 || doubled != 0 || runs != events || stuck != 0 {
		t.Fatalf("lost %d, doubled %d, runs %d (want %d), dead/stuck %d", lost, doubled, runs, events, stuck)
	}
	if err := current.Load().Terminate(30 * time.Second); err != nil {
		t.Fatalf("graceful stop of the last runner: %v", err)
	}
}
