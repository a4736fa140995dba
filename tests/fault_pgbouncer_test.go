package tests

import (
	"context"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/runner"
)

// TestPgBouncerRestartMidLoad: under a steady signed load, with the sql:
// handler, the PgBouncer DATABASE_URL points at is stopped for 3 s and
// started again (same port). While it is down every delivery is answered
// 503, never 2xx and never 500; pginbox takes writes again by itself
// within 60 s, and in the end every acknowledged delivery is stored and
// every event was handled exactly once.
func TestPgBouncerRestartMidLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	h := sideTable(t, pool)
	bouncer := pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 4})
	srv := startServer(t, bouncer.Via(conf.URL()), runner.Config{
		Handler: h, Workers: 4, BatchSize: 20, Lease: 3 * time.Second,
		ReconcileEvery: 500 * time.Millisecond, PollInterval: 200 * time.Millisecond, IngestTimeout: 3 * time.Second,
	}, sumeOnly)
	load := startLoad(srv.Base, "bounce", 4)
	time.Sleep(1500 * time.Millisecond)
	if err := bouncer.Stop(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	time.Sleep(3 * time.Second)
	up := time.Now()
	if got := load.OKBetween(down.Add(100*time.Millisecond), up); got != 0 {
		t.Errorf("%d deliveries answered 2xx while PgBouncer was down", got)
	}
	if err := bouncer.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var resumed time.Time
	waitFor(t, 60*time.Second, "a 2xx after PgBouncer is back", func() bool {
		resumed = load.FirstOKAfter(up)
		return !resumed.IsZero()
	})
	time.Sleep(time.Second)
	load.Stop()
	st := load.Statuses()
	t.Logf("answers %v; first 2xx %v after PgBouncer was back; slowest non-2xx %v", st, resumed.Sub(up).Round(time.Millisecond), load.Slowest())
	if st[503] == 0 {
		t.Error("no 503 while PgBouncer was down: the outage was not exercised")
	}
	for code, n := range st {
		if code != 200 && code != 503 {
			t.Errorf("%d answers with status %d (want only 200 and 503)", n, code)
		}
	}
	auditExactlyOnce(t, pool, load.Acked(), 60*time.Second)
}
