package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// ownCluster starts a cluster of the test's own with settings over the test
// settings, removed when the test ends, and returns it with a superuser URL
// on its database postgres; migrate applies pginbox's migrations there.
func ownCluster(t *testing.T, settings map[string]string, migrate bool) (*localpg.Cluster, string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgtest.StartClusterWith(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopMode(context.Background(), "immediate"); _ = c.Remove() })
	url := c.URL("postgres")
	if migrate {
		pool := PoolFor(t, url, 2)
		db := stdlib.OpenDBFromPool(pool)
		if err := pginbox.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		db.Close()
		pool.Close()
	}
	return c, url
}

// deliver sends one signed Sume delivery for key and returns the status
// (0 on a transport error) and how long the answer took.
func deliver(client *http.Client, base, key string) (int, time.Duration) {
	body := sampleBody("sume", key)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/sume", stringsReader(body))
	req.Header = signSume(sumeSecret, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	took := time.Since(start)
	if err != nil {
		return 0, took
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, took
}

// hostList is a multi-host URL over the clusters' ports, database postgres,
// asking for the server that takes writes.
func hostList(cs ...*localpg.Cluster) string {
	hosts := ""
	for i, c := range cs {
		if i > 0 {
			hosts += ","
		}
		hosts += fmt.Sprintf("127.0.0.1:%d", c.Port)
	}
	return "postgres://" + localpg.Superuser + "@" + hosts + "/postgres?sslmode=disable&target_session_attrs=read-write"
}

// signedLoad is a provider-like sender: senders goroutines deliver fresh
// signed Sume events one after another, retrying a non-2xx (or a transport
// error) with the same key after 100 ms, until Stop.
type signedLoad struct {
	base   string
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	next   atomic.Int64
	prefix string

	mu       sync.Mutex
	acked    []string
	okTimes  []time.Time // when each 2xx was answered
	statuses map[int]int // every answer by status (0: transport error)
	slowest  time.Duration
}

// startLoad starts senders senders against base.
func startLoad(base, prefix string, senders int) *signedLoad {
	l := &signedLoad{base: base, prefix: prefix, client: &http.Client{Timeout: 30 * time.Second},
		stop: make(chan struct{}), statuses: map[int]int{}}
	for s := 0; s < senders; s++ {
		l.wg.Add(1)
		go l.send()
	}
	return l
}

func (l *signedLoad) send() {
	defer l.wg.Done()
	for {
		key := fmt.Sprintf("%s_%06d", l.prefix, l.next.Add(1))
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			status, took := deliver(l.client, l.base, key)
			l.mu.Lock()
			l.statuses[status]++
			if status != 200 && took > l.slowest {
				l.slowest = took
			}
			if status == 200 {
				l.acked = append(l.acked, key)
				l.okTimes = append(l.okTimes, time.Now())
			}
			l.mu.Unlock()
			if status == 200 {
				break
			}
			select {
			case <-l.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// Stop ends the senders and waits for them.
func (l *signedLoad) Stop() {
	close(l.stop)
	l.wg.Wait()
}

// Acked returns the keys answered 2xx so far.
func (l *signedLoad) Acked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// Statuses returns the answers by status so far.
func (l *signedLoad) Statuses() map[int]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int]int{}
	for k, v := range l.statuses {
		out[k] = v
	}
	return out
}

// FirstOKAfter returns the first 2xx answered after t (zero if none).
func (l *signedLoad) FirstOKAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.okTimes {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// OKBetween counts the 2xx answered within [from, to].
func (l *signedLoad) OKBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.okTimes {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// Slowest returns the longest wait for a non-2xx answer.
func (l *signedLoad) Slowest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slowest
}

// auditExactlyOnce checks, on pool, that every acked key is stored once and
// processed, and that the sql: handler's side table saw each event once.
func auditExactlyOnce(t *testing.T, pool *pgxpool.Pool, acked []string, within time.Duration) {
	t.Helper()
	waitFor(t, within, "every event processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
	})
	stored := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sume' AND external_id = ANY($1)`, acked)
	runs := queryInt(t, pool, `SELECT count(*) FROM app.seen`)
	distinct := queryInt(t, pool, `SELECT count(DISTINCT event_id) FROM app.seen`)
	events := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`)
	t.Logf("audit: acknowledged %d, stored %d of them; events %d, handler runs %d (distinct %d)", len(acked), stored, events, runs, distinct)
	if stored != int64(len(acked)) {
		t.Errorf("%d acknowledged deliveries are missing", int64(len(acked))-stored)
	}
	if runs != distinct || distinct != events {
		t.Errorf("handler runs %d for %d distinct events of %d: something ran twice or not at all", runs, distinct, events)
	}
}
