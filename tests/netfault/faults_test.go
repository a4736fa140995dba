package netfault

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

const (
	secret = "netfault-test-secret"
	// senders post deliveries at once, for faultTime.
	senders = 32
	// drainBound is how long after the network heals every acked event
	// must be processed.
	drainBound = 30 * time.Second
)

// handlerSQL is the sql: handler's function: it records each event it
// handles in app.seen, after a short sleep so that batches are in flight
// when a fault strikes.
const handlerSQL = `
	CREATE SCHEMA app;
	CREATE TABLE app.seen (event_id bigint NOT NULL, external_id text NOT NULL);
	CREATE FUNCTION app.on_webhook(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    PERFORM pg_sleep(0.002);
	    INSERT INTO app.seen (event_id, external_id) VALUES (e.id, e.external_id);
	END $$;`

// A fault is one way the network between the runner and PostgreSQL breaks,
// held for its time and then healed.
type fault struct {
	name   string
	toxics []string // toxiproxy toxics (JSON), all added at once
	down   bool     // the proxy stops: connections closed, new ones refused
}

// faults are applied one after another, for about 3 s each with 1.2 s of
// healthy network between them.
var faults = []fault{
	{name: "latency", toxics: []string{
		`{"name": "lat_down", "type": "latency", "stream": "downstream", "attributes": {"latency": 300, "jitter": 200}}`,
		`{"name": "lat_up", "type": "latency", "stream": "upstream", "attributes": {"latency": 100, "jitter": 50}}`}},
	// The server's replies reset the connection: a statement (a claim
	// included) commits and its reply never arrives.
	{name: "reset on reply", toxics: []string{
		`{"name": "reset_down", "type": "reset_peer", "stream": "downstream", "attributes": {"timeout": 0}}`}},
	{name: "reset on request", toxics: []string{
		`{"name": "reset_up", "type": "reset_peer", "stream": "upstream", "attributes": {"timeout": 0}}`}},
	// Replies vanish, and the proxy closes the connection 1.5 s later.
	{name: "timeout", toxics: []string{
		`{"name": "timeout_down", "type": "timeout", "stream": "downstream", "attributes": {"timeout": 1500}}`}},
	// Nothing gets through either way, and nothing is closed: a black hole.
	{name: "black hole", toxics: []string{
		`{"name": "hole_down", "type": "timeout", "stream": "downstream", "attributes": {"timeout": 0}}`,
		`{"name": "hole_up", "type": "timeout", "stream": "upstream", "attributes": {"timeout": 0}}`}},
	{name: "server unreachable", down: true},
	{name: "bandwidth", toxics: []string{
		`{"name": "bw_down", "type": "bandwidth", "stream": "downstream", "attributes": {"rate": 4}}`}},
	{name: "sliced", toxics: []string{
		`{"name": "slice_down", "type": "slicer", "stream": "downstream", "attributes": {"average_size": 16, "size_variation": 8, "delay": 200}}`,
		`{"name": "slice_up", "type": "slicer", "stream": "upstream", "attributes": {"average_size": 8, "size_variation": 4, "delay": 200}}`}},
	// Some connections (not all) reset as the reply comes.
	{name: "some replies reset", toxics: []string{
		`{"name": "reset_some", "type": "reset_peer", "stream": "downstream", "toxicity": 0.3, "attributes": {"timeout": 0}}`}},
}

// TestNetworkFaultsParkNothing: a runner with a sql: handler reaches
// PostgreSQL through toxiproxy while 32 senders post deliveries to it for
// about 40 s, and the network between them breaks in every way above. Once
// the network heals, every acked event is processed within 30 s — none
// is left processing for its 5-minute lease (a claim that committed while
// its reply was lost is taken back by its worker) — nothing acked is
// lost, and no handler's effects are there twice. Reconciliation is off, so
// nothing but the workers themselves can hand a lost lease back. Once with
// the default lease (the row lock for sql:, the two-phase lease after a
// failed batch) and once with PGINBOX_LEASE_MODE=two-phase.
func TestNetworkFaultsParkNothing(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "two-phase"} {
		name := mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runFaults(t, mode)
		})
	}
}

func runFaults(t *testing.T, leaseMode string) {
	ctx := context.Background()
	conf := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, conf.URL(), 4)
	if _, err := pool.Exec(ctx, handlerSQL); err != nil {
		t.Fatal(err)
	}

	proxy := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		"pg", "127.0.0.1:0", net.JoinHostPort(conf.Host, conf.Port))
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	proxied, err := url.Parse(conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxied.Host = proxy.Listen

	h, err := runner.ParseHandler("sql:app.on_webhook", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sume, err := verify.New("sume", []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logRecorder{}
	srv, err := runner.New(ctx, runner.Config{
		Handler: h, Workers: 8, BatchSize: 16, LeaseMode: leaseMode,
		// The row-lock batch's limit: a batch statement whose reply a
		// black hole swallowed is given up after it.
		HandlerTimeout: 5 * time.Second,
		PollInterval:   500 * time.Millisecond,
		Addr:           "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		ReconcileEvery: -1, ChecksEvery: -1, PruneEvery: -1,
		Providers:   map[string]verify.Provider{"sume": sume},
		SkipMigrate: true,
	}, proxied.String(), slog.New(logs))
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(runCtx) }()
	t.Cleanup(func() {
		stopRunner()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("runner: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the runner did not stop within 60 s")
		}
		if t.Failed() {
			t.Logf("runner log (last lines):\n%s", logs.tail(60))
		}
	})
	endpoint := "http://" + srv.Addr().String() + "/webhooks/sume"

	// The senders: each posts deliveries of its own keys, one after
	// another, and keeps the keys acked (200).
	var acked sync.Map
	var nAcked, nRefused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 3 * time.Second}
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("job_%d_%d", s, i)
				body := fmt.Sprintf(`{"job_id": %q, "event": "job.completed", "status": "COMPLETED"}`, key)
				req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
				if err != nil {
					panic(err)
				}
				req.Header = testsign.Sume(secret, body, time.Now())
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					nRefused.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					acked.Store(key, true)
					nAcked.Add(1)
				} else {
					nRefused.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}

	time.Sleep(2 * time.Second)
	for _, f := range faults {
		if f.down {
			proxy.Stop()
		}
		for _, tox := range f.toxics {
			if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(tox)); err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
		}
		time.Sleep(3 * time.Second)
		proxy.Toxics.ResetToxics(ctx)
		if f.down {
			if err := proxy.Start(); err != nil {
				t.Fatalf("%s: restart the proxy: %v", f.name, err)
			}
		}
		time.Sleep(1200 * time.Millisecond)
	}
	healed := time.Now()
	close(stop)
	wg.Wait()
	if nAcked.Load() == 0 {
		t.Fatal("no delivery was acked")
	}

	// Within drainBound of the network healing, every event is processed.
	var left []string
	var nLeft int64
	for {
		left, nLeft = unfinished(t, pool)
		if nLeft == 0 || time.Since(healed) > drainBound {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	took := time.Since(healed)
	t.Logf("%d deliveries acked, %d refused or failed; workers took back lost leases %d times",
		nAcked.Load(), nRefused.Load(), logs.count("took back events"))
	if nLeft > 0 {
		t.Fatalf("%d events not processed %s after the network healed (lease 5 min, reconciliation off):\n%s",
			nLeft, drainBound, strings.Join(left, "\n"))
	}
	t.Logf("every event processed %.1f s after the network healed", took.Seconds())

	// Nothing acked was lost; no handler's effects are there twice.
	processed := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT external_id FROM webhooks.events WHERE status = 'processed'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		processed[k] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lost := 0
	acked.Range(func(k, _ any) bool {
		if !processed[k.(string)] {
			lost++
			if lost <= 10 {
				t.Errorf("acked delivery %s is not a processed event", k)
			}
		}
		return true
	})
	if lost > 0 {
		t.Fatalf("%d acked deliveries lost", lost)
	}
	var events, seen, twice int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks.events), (SELECT count(*) FROM app.seen),
		(SELECT count(*) FROM (SELECT event_id FROM app.seen GROUP BY event_id HAVING count(*) > 1) x)`).Scan(&events, &seen, &twice); err != nil {
		t.Fatal(err)
	}
	if twice > 0 || seen != events {
		t.Fatalf("handler effects: %d rows for %d events, %d events handled more than once", seen, events, twice)
	}
}

// unfinished describes the events not processed yet, grouped by status and
// holder, and counts them.
func unfinished(t *testing.T, pool *pgxpool.Pool) ([]string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, `
		SELECT status, coalesce(locked_by, ''), count(*), min(claimed_at)::text, max(attempts)
		FROM webhooks.events WHERE status <> 'processed'
		GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	var total int64
	for rows.Next() {
		var status, holder string
		var n int64
		var claimed *string
		var attempts int32
		if err := rows.Scan(&status, &holder, &n, &claimed, &attempts); err != nil {
			t.Fatal(err)
		}
		c := "never"
		if claimed != nil {
			c = *claimed
		}
		total += n
		out = append(out, fmt.Sprintf("  %d %s (locked by %q, claimed at %s, attempts up to %d)", n, status, holder, c, attempts))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, total
}

// logRecorder is the runner's slog handler: it keeps the records, which the
// test counts and shows when it fails.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelInfo }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(r.Time.Format("15:04:05.000 ") + r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// count returns how many records' messages contain s.
func (l *logRecorder) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// tail returns the last n records.
func (l *logRecorder) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(0, len(l.lines)-n):], "\n")
}
