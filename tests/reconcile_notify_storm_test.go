package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestNotifyStormRunsOnePassASecond: any role that can connect can send
// NOTIFY webhooks_reconcile. Hundreds of them within about two seconds make
// a runner start at most one notified pass a second (a few passes in all),
// not one pass per notification; a notification after the storm still gets
// its pass.
func TestNotifyStormRunsOnePassASecond(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	startServer(t, conf.URL(), runner.Config{ReconcileEvery: time.Hour}, sumeOnly)
	waitFor(t, 10*time.Second, "the listener", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-listener' AND datname = current_database()`) == 1
	})
	// The LISTEN runs a moment after the connection shows: wait for a first pass.
	waitFor(t, 10*time.Second, "a first notified pass", func() bool {
		execSQL(t, pool, `NOTIFY webhooks_reconcile, 'warm-up'`)
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) >= 1
	})
	time.Sleep(1500 * time.Millisecond) // let a queued warm-up pass run
	before := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`)

	start := time.Now()
	sent := 0
	for time.Since(start) < 2*time.Second {
		execSQL(t, pool, fmt.Sprintf(`NOTIFY webhooks_reconcile, 'storm-%d'`, sent))
		sent++
	}
	stormed := time.Since(start)
	time.Sleep(2500 * time.Millisecond) // the held pass, and one queued behind it
	passes := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) - before
	t.Logf("%d notifications in %v: %d passes", sent, stormed.Round(time.Millisecond), passes)
	if sent < 100 {
		t.Fatalf("only %d notifications sent in 2s: the storm is too weak to show anything", sent)
	}
	// Passes start at most a second apart: one per second of storm, plus
	// the one queued at its end.
	if limit := int64(stormed.Seconds()) + 3; passes < 1 || passes > limit {
		t.Fatalf("%d notifications made %d reconcile passes, want 1 to %d (at most one a second)", sent, passes, limit)
	}
	afterStorm := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`)
	waitFor(t, 5*time.Second, "a pass for a notification after the storm", func() bool {
		execSQL(t, pool, `NOTIFY webhooks_reconcile, 'after'`)
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) > afterStorm
	})
}
