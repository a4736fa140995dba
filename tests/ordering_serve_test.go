package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/runner"
)

// TestOrderingServeLeaseModes: `pginbox serve` with 8 workers keeps strict
// order per key in every lease mode: the sql: handler under the row lock
// (process_pending) and two-phase (claim + process_batch, then event by
// event), and a Go handler under the row lock (_lock_pending) and
// two-phase (claim + complete). 30 customers x 10 events and 50 unordered
// ones are stored in random order first; each runs exactly once, and each
// sequence in order.
func TestOrderingServeLeaseModes(t *testing.T) {
	t.Parallel()
	goHandler := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		_, err := tx.Exec(ctx, `SELECT app.ordered(e) FROM webhooks.events AS e WHERE e.id = $1`, ev.ID)
		return err
	})
	sqlHandler, err := runner.ParseHandler("sql:app.ordered", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name    string
		handler runner.Handler
		lease   string
	}{
		{"sql row-lock", sqlHandler, ""},
		{"sql two-phase", sqlHandler, "two-phase"},
		{"go row-lock", goHandler, "row-lock"},
		{"go two-phase", goHandler, ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 6)
			setupOrdered(t, pool, "stripe")
			evs := orderedEvents(30, 10, 50)
			ingestOrdered(t, pool, "stripe", evs, 4, `, "sleep": 0.001`)
			startServer(t, conf.URL(), runner.Config{Handler: mode.handler, LeaseMode: mode.lease, Workers: 8,
				BatchSize: 10, PollInterval: 50 * time.Millisecond}, sumeOnly)
			waitFor(t, 90*time.Second, "every event processed", func() bool {
				return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == int64(len(evs))
			})
			auditOrder(t, pool, "stripe", int64(len(evs)), true)
		})
	}
}

// TestOrderingKillRunnerMidSequence: `pginbox serve` (sql: handler, in both
// lease modes, and under the row lock through PgBouncer in transaction
// mode) is killed with SIGKILL three times while it works through 30
// customers x 40 events stored in random order. Rolled-back row-lock
// batches and rescued two-phase leases both leave their sequences where
// they were: afterwards every event ran exactly once and every sequence in
// order.
func TestOrderingKillRunnerMidSequence(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	for _, name := range []string{"row-lock", "two-phase", "row-lock via pgbouncer"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lease := strings.TrimSuffix(name, " via pgbouncer")
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 6)
			setupOrdered(t, pool, "stripe")
			evs := orderedEvents(30, 40, 0)
			ingestOrdered(t, pool, "stripe", evs, 4, `, "sleep": 0.01`)
			port, err := localpg.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			dbURL := conf.URL()
			if lease != name {
				dbURL = pgtest.PgBouncerFor(t, pgtest.PgBouncerOptions{PoolSize: 6}).Via(dbURL)
			}
			env := map[string]string{
				"DATABASE_URL":            dbURL,
				"PGINBOX_ADDR":            fmt.Sprintf("127.0.0.1:%d", port),
				"PGINBOX_HANDLER":         "sql:app.ordered",
				"PGINBOX_LEASE_MODE":      lease,
				"PGINBOX_WORKERS":         "8",
				"PGINBOX_BATCH":           "10",
				"PGINBOX_LEASE":           "2s",
				"PGINBOX_RECONCILE_EVERY": "500ms",
				"PGINBOX_POLL_INTERVAL":   "100ms",
				"PGINBOX_LOG_LEVEL":       "error",
			}
			if lease == "row-lock" {
				delete(env, "PGINBOX_LEASE_MODE") // the default for a sql: handler
			}
			current := startRunner(t, env)
			for kills := 0; kills < 3; kills++ {
				time.Sleep(time.Duration(400+rand.IntN(600)) * time.Millisecond)
				current.Kill()
				t.Logf("kill %d: %d of %d events processed", kills+1,
					queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`), len(evs))
				time.Sleep(100 * time.Millisecond)
				current = startRunner(t, env)
			}
			waitFor(t, 90*time.Second, "every event processed after the kills", func() bool {
				return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == int64(len(evs))
			})
			auditOrder(t, pool, "stripe", int64(len(evs)), true)
		})
	}
}
