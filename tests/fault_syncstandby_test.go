package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/runner"
)

// TestSyncStandbyLostNoAck: a primary with a synchronous streaming standby
// (pg_basebackup -R, synchronous_standby_names = '*') and two runners on it
// with a 2 s ingest timeout, one storing each delivery alone
// (PGINBOX_INGEST_BATCH=1), one batching (the default). While the standby is
// stopped every commit waits for it until the deadline cancels the wait, and
// PostgreSQL then commits locally with a warning: no delivery is answered
// 2xx, neither the first delivery of a key nor its retry (a duplicate of a
// row committed locally only), and batched deliveries whose own deadline had
// not passed when their batch's wait was cancelled get no 2xx either. The
// rows were committed locally, pginbox_ingest_commit_unconfirmed_total
// counts them. With the standby back, the same keys and new ones are
// answered 2xx again. The standby is stopped once more, a wave is answered
// 503, the primary is killed (under a commit waiting on each runner, which
// is answered 503 and counted as no_answer) and the standby promoted: every
// delivery ever answered 2xx is on it.
func TestSyncStandbyLostNoAck(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	// As TestPrimaryFailover: pg_basebackup of the server's own major.
	if bin := os.Getenv("PGINBOX_PG_BINDIR"); bin != "" {
		if _, err := os.Stat(filepath.Join(bin, "pg_basebackup")); err != nil {
			t.Skipf("no pg_basebackup in PGINBOX_PG_BINDIR=%s: the test needs one of the server's major", bin)
		}
	}
	ctx := context.Background()
	start := time.Now()
	primary, primaryURL := ownCluster(t, nil, true)
	setup := PoolFor(t, primaryURL, 2)
	dir, err := os.MkdirTemp("", "pginbox-test-syncstandby-")
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
	streaming := func() {
		t.Helper()
		waitFor(t, 30*time.Second, "the standby streaming synchronously", func() bool {
			return queryInt(t, setup, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'`) == 1
		})
	}
	streaming()

	const timeout = 2 * time.Second
	servers := []struct {
		name string
		srv  *testServer
	}{
		{"alone", startServer(t, primaryURL, runner.Config{SkipMigrate: true, PollOnly: true, IngestTimeout: timeout, IngestBatch: 1}, sumeOnly)},
		{"batched", startServer(t, primaryURL, runner.Config{SkipMigrate: true, PollOnly: true, IngestTimeout: timeout}, sumeOnly)},
	}
	var mu sync.Mutex
	var acked []string // every key answered 2xx, on either server
	keys := func(server, phase string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s_%s_%02d", server, phase, i)
		}
		return out
	}
	// noAck sends keys to base, one every 250 ms: the batching runner's four
	// flushers are all waiting when the fifth arrives, so the later ones
	// queue and share a batch with deliveries whose deadline comes before
	// theirs. Then every key again (a retry, now a duplicate where the first
	// commit happened locally). No answer may be a 2xx.
	noAck := func(name, base string, ks []string) {
		t.Helper()
		for _, what := range []string{"delivery", "retry"} {
			for i, a := range wave(base, ks, 250*time.Millisecond) {
				if a.status >= 200 && a.status < 300 {
					mu.Lock()
					acked = append(acked, ks[i])
					mu.Unlock()
					t.Errorf("%s: %s %s answered %d after %v with the synchronous standby stopped", name, what, ks[i], a.status, a.took.Round(time.Millisecond))
				} else if a.status != http.StatusServiceUnavailable {
					t.Errorf("%s: %s %s answered %d, want 503", name, what, ks[i], a.status)
				}
				if a.took > timeout+time.Second {
					t.Errorf("%s: %s %s waited %v for its answer (ingest timeout %v)", name, what, ks[i], a.took, timeout)
				}
			}
		}
	}

	// 1. The standby streams: 2xx.
	for _, s := range servers {
		ks := keys(s.name, "up", 4)
		for i, a := range wave(s.srv.Base, ks, 0) {
			if a.status != http.StatusOK {
				t.Fatalf("%s: %s answered %d with the standby streaming", s.name, ks[i], a.status)
			}
		}
		acked = append(acked, ks...)
	}

	// noAckAll runs noAck on both runners at once.
	noAckAll := func(phase string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, s := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				noAck(s.name, s.srv.Base, keys(s.name, phase, 8))
			}()
		}
		wg.Wait()
	}

	// 2. The standby stopped: no 2xx, though the rows are committed locally.
	if err := standby.StopMode(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	noAckAll("down")
	for _, s := range servers {
		ks := keys(s.name, "down", 8)
		local := queryInt(t, setup, `SELECT count(*) FROM webhooks.events WHERE external_id = ANY($1)`, ks)
		cancelled := metricValue(t, s.srv.Admin, "pginbox_ingest_commit_unconfirmed_total", `reason="sync_rep_cancelled"`)
		t.Logf("%s, standby stopped: %d of %d keys committed locally; %d deliveries answered 503 for a cancelled wait", s.name, local, len(ks), cancelled)
		if local == 0 {
			t.Errorf("%s: no row committed locally: the cancelled commit wait was not exercised", s.name)
		}
		if cancelled == 0 {
			t.Errorf("%s: pginbox_ingest_commit_unconfirmed_total{reason=\"sync_rep_cancelled\"} is 0", s.name)
		}
	}

	// An operator's pg_cancel_backend of a commit waiting for the standby,
	// before the ingest deadline: the same warning, the same 503, at once
	// (only the warning tells: the request's context is still live).
	for _, s := range servers {
		key := s.name + "_cancelled"
		done := make(chan answered, 1)
		go func() { done <- wave(s.srv.Base, []string{key}, 0)[0] }()
		var n int64
		waitFor(t, 5*time.Second, "a commit waiting for the standby, to cancel", func() bool {
			n = queryInt(t, setup, `SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'pginbox-ingest' AND wait_event = 'SyncRep'`)
			return n > 0
		})
		a := <-done
		t.Logf("%s: a commit cancelled by pg_cancel_backend: %d after %v", s.name, a.status, a.took.Round(time.Millisecond))
		if a.status != http.StatusServiceUnavailable || a.took >= timeout {
			t.Errorf("%s: %s, its commit's wait cancelled by pg_cancel_backend, answered %d after %v; want 503 before the %v deadline",
				s.name, key, a.status, a.took, timeout)
		}
	}

	// 3. The standby back: the same keys (created or duplicate) and new
	// ones are answered 2xx again.
	if err := standby.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	streaming()
	for _, s := range servers {
		ks := append(keys(s.name, "down", 8), keys(s.name, "back", 4)...)
		for i, a := range wave(s.srv.Base, ks, 0) {
			if a.status != http.StatusOK {
				t.Errorf("%s: %s answered %d with the standby back", s.name, ks[i], a.status)
				continue
			}
			acked = append(acked, ks[i])
		}
	}

	// 4. The standby stopped again, a wave answered 503, the primary lost
	// and the standby promoted: every 2xx is on it.
	if err := standby.StopMode(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	noAckAll("lost")
	// The primary dies while a commit on each runner waits for the standby:
	// no answer to that commit ever comes (no_answer), and no 2xx either.
	killed := make(chan answered, len(servers))
	for _, s := range servers {
		go func() { killed <- wave(s.srv.Base, []string{s.name + "_killed"}, 0)[0] }()
	}
	waitFor(t, 5*time.Second, "a commit of each runner waiting for the standby", func() bool {
		return queryInt(t, setup, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'pginbox-ingest' AND wait_event = 'SyncRep'`) == int64(len(servers))
	})
	setup.Close()
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	for range servers {
		if a := <-killed; a.status != http.StatusServiceUnavailable {
			t.Errorf("a delivery whose commit was waiting when the primary died answered %d, want 503", a.status)
		}
	}
	for _, s := range servers {
		if n := metricValue(t, s.srv.Admin, "pginbox_ingest_commit_unconfirmed_total", `reason="no_answer"`); n != 1 {
			t.Errorf("%s: pginbox_ingest_commit_unconfirmed_total{reason=\"no_answer\"} = %d after the primary died under one waiting commit, want 1", s.name, n)
		}
	}
	if err := standby.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := PoolFor(t, standby.URL("postgres"), 2)
	missing := missingKeys(t, promoted, acked)
	lost := queryInt(t, promoted, `SELECT count(*) FROM webhooks.events WHERE external_id LIKE '%\_lost\_%'`)
	t.Logf("after the promotion: %d 2xx answers, for %d keys, %d of them missing; %d of the last wave's rows (answered 503) there; %v in all",
		len(acked), queryInt(t, promoted, `SELECT count(DISTINCT k) FROM unnest($1::text[]) AS k`, acked), len(missing), lost,
		time.Since(start).Round(100*time.Millisecond))
	if len(missing) > 0 {
		t.Errorf("answered 2xx but missing on the promoted standby: %v", missing)
	}
}

// answered is one delivery's answer and how long it took.
type answered struct {
	status int
	took   time.Duration
}

// wave delivers a signed Sume event for each key to base, the i-th after
// i×gap, all in flight together, and returns the answers in key order.
func wave(base string, keys []string, gap time.Duration) []answered {
	client := &http.Client{Timeout: 30 * time.Second}
	out := make([]answered, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * gap)
			out[i].status, out[i].took = deliver(client, base, key)
		}()
	}
	wg.Wait()
	return out
}

// missingKeys returns the distinct keys with no Sume event on pool.
func missingKeys(t *testing.T, pool *pgxpool.Pool, keys []string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT DISTINCT k FROM unnest($1::text[]) AS k
		WHERE NOT EXISTS (SELECT FROM webhooks.events WHERE provider = 'sume' AND external_id = k) ORDER BY k`, keys)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
