package tests

import (
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestServeReconcileOnNotify: NOTIFY webhooks_reconcile (what run_checks()
// sends on a breach) makes a running runner run a pass within a second or
// two, independently of its schedule.
func TestServeReconcileOnNotify(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	startServer(t, conf.URL(), runner.Config{ReconcileEvery: time.Hour}, sumeOnly)
	waitFor(t, 10*time.Second, "the listener", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-listener' AND datname = current_database()`) == 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`); n != 0 {
		t.Fatalf("%d passes before any trigger", n)
	}
	// The listener's connection shows in pg_stat_activity a moment before
	// its LISTEN runs, and a notification sent in between reaches nobody:
	// send it again while waiting (the runner coalesces duplicate
	// wake-ups). The hourly schedule cannot account for the pass.
	start := time.Now()
	var sent time.Time
	waitFor(t, 5*time.Second, "a reconcile pass after NOTIFY", func() bool {
		if time.Since(sent) > 250*time.Millisecond {
			execSQL(t, pool, `NOTIFY webhooks_reconcile, '{"source": "test"}'`)
			sent = time.Now()
		}
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) >= 1
	})
	t.Logf("pass recorded %v after the NOTIFY", time.Since(start).Round(time.Millisecond))
}

// TestServeChecksSchedule: the runner refreshes the views one by one and runs
// the checks on its schedule; a breach it finds triggers reconciliation.
func TestServeChecksSchedule(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('p', 'x', 't', '{}', 'dead', 'boom', 1)`)
	startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour}, sumeOnly)
	waitFor(t, 20*time.Second, "scheduled checks with the dead-event breach", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h' AND NOT ok`) >= 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes WHERE refreshed_at IS NULL`); n != 0 {
		t.Fatalf("%d views never refreshed by the schedule", n)
	}
	waitFor(t, 10*time.Second, "the breach to trigger a reconcile pass", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) >= 1
	})
}
