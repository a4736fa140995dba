package tests

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestTwoRunnersShareWork: two `pginbox serve` processes on one database,
// deliveries spread over both (each event delivered to both), share the
// processing without running any event twice.
func TestTwoRunnersShareWork(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	sideTable(t, pool)
	env := map[string]string{
		"DATABASE_URL":        conf.URL(),
		"PGINBOX_PROVIDERS":   "sume=sume",
		"PGINBOX_SECRET_SUME": sumeSecret,
		"PGINBOX_HANDLER":     sideTableHandler,
		"PGINBOX_WORKERS":     "3",
		"PGINBOX_BATCH":       "5",
		"PGINBOX_LOG_LEVEL":   "warn",
	}
	runners := []*runnerProc{startRunner(t, env), startRunner(t, env)}
	const events = 600
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := s; i < events; i += 8 {
				key := fmt.Sprintf("job_%04d", i)
				body := sampleBody("sume", key)
				for _, r := range []*runnerProc{runners[i%2], runners[(i+1)%2]} {
					req, _ := http.NewRequest(http.MethodPost, r.Base+"/webhooks/sume", stringsReader(body))
					req.Header = signSume(sumeSecret, body, time.Now())
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						errs <- fmt.Errorf("%s: %d", key, resp.StatusCode)
						return
					}
				}
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "both runners to process everything", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == events
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM app.seen`); n != events {
		t.Fatalf("handler runs %d, want %d", n, events)
	}
	if n := queryInt(t, pool, `SELECT count(DISTINCT event_id) FROM app.seen`); n != events {
		t.Fatalf("distinct events run %d, want %d", n, events)
	}
	var done [2]int64
	for i, r := range runners {
		done[i] = metricValue(t, r.Admin, "pginbox_events_completed_total")
	}
	t.Logf("completed by runner A %d, by runner B %d", done[0], done[1])
	if done[0] == 0 || done[1] == 0 || done[0]+done[1] != events {
		t.Fatalf("completions per runner %v: want both > 0, summing to %d", done, events)
	}
}
