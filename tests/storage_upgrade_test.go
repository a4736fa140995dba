package tests

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox"
)

// TestStorageUpgradeUnderLoad: a database at the last version before
// storage v2 (webhooks.events a table) holding events in every state —
// dead through fail() at max_attempts, pending after a failed attempt,
// processed through claim()/complete() and 5,000 more inserted in bulk over
// four days, processing under a lease, pending, some with body digests, and
// the ordered provider shop part-way through its sequences — is migrated to
// the latest version while four goroutines call ingest_webhook() with old
// keys, new keys and new keys again; then webhooks.move_history(500) runs
// until it is done, ingest still running. No ingest call fails or waits
// over 1 s, every known key answers 'duplicate' during and after, every key
// is stored once, unfinished events keep their state in the queue, processed
// ones end in webhooks.history, the queue's legacy unique key is gone,
// storage_state says keys_pending false, and shop is still ordered: the old
// handler runs the rest of each sequence in order.
func TestStorageUpgradeUnderLoad(t *testing.T) {
	t.Parallel()
	db, conf := emptyDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	l := buildLegacy(t, db, conf.URL(), 5000)
	live := startLiveIngest(l.pool, l.keys, 4)
	defer live.Stop()
	time.Sleep(300 * time.Millisecond)

	live.setPhase("migrate")
	start := time.Now()
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate under ingest: %v", err)
	}
	t.Logf("migrate took %v", time.Since(start).Round(time.Millisecond))

	live.setPhase("move")
	start = time.Now()
	calls, _, err := moveHistory(ctx, l.pool, 500, false, time.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("move_history(500): %d calls in %v", calls, time.Since(start).Round(time.Millisecond))
	live.setPhase("after")
	time.Sleep(300 * time.Millisecond)
	live.Stop()

	live.check(t, time.Second)
	checkUpgraded(t, l, live.createdKeys())
	checkOrderingKept(t, l.pool)
}

// TestStorageUpgradeKillDuringMove: the same database with 30,000 bulk
// events on a server of its own, migrated under live ingest; the server is
// killed with SIGKILL twice while webhooks.move_history(250) runs — once
// while old keys are being copied into webhooks.keys, once while processed
// events are moving into history — and restarted, and the calls go on until
// done. No key is lost or stored twice, no old key is answered 'created',
// and every event keeps its state (the same checks as
// TestStorageUpgradeUnderLoad).
func TestStorageUpgradeKillDuringMove(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	// synchronous_commit on: an answered call is durable across the kill.
	c, url := ownCluster(t, map[string]string{"synchronous_commit": "on"}, false)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	l := buildLegacy(t, db, url, 30000)
	processed := int64(0)
	for _, k := range l.keys {
		if k.Status == "processed" {
			processed++
		}
	}
	live := startLiveIngest(l.pool, l.keys, 4)
	defer live.Stop()
	time.Sleep(300 * time.Millisecond)
	live.setPhase("migrate")
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate under ingest: %v", err)
	}

	live.setPhase("move")
	type result struct {
		calls, failed int
		err           error
	}
	done := make(chan result, 1)
	mctx, stopMover := context.WithCancel(ctx)
	defer stopMover()
	go func() {
		calls, failed, err := moveHistory(mctx, l.pool, 250, true, time.Now().Add(4*time.Minute))
		done <- result{calls, failed, err}
	}()
	kill := func(what string, when func(pending bool, cursor, upto, moved int64) bool) {
		t.Helper()
		var pending bool
		var cursor, upto, moved int64
		deadline := time.Now().Add(time.Minute)
		for {
			if err := l.pool.QueryRow(ctx, `SELECT keys_pending, keys_cursor, (SELECT coalesce(max(id), 0) FROM webhooks.events), moved FROM webhooks.storage_state`).
				Scan(&pending, &cursor, &upto, &moved); err != nil {
				t.Fatal(err)
			}
			if when(pending, cursor, upto, moved) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never reached (keys_pending %v, cursor %d of %d, moved %d of %d)", what, pending, cursor, upto, moved, processed)
			}
			time.Sleep(10 * time.Millisecond)
		}
		live.tolerant.Store(true)
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		t.Logf("killed %s: keys_pending %v, cursor %d of %d, moved %d of %d", what, pending, cursor, upto, moved, processed)
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := c.Restart(rctx); err != nil {
			t.Fatal(err)
		}
	}
	kill("while copying keys", func(pending bool, cursor, upto, _ int64) bool {
		if !pending {
			t.Fatalf("the keys were all copied before the kill (cursor %d of %d): nothing to test", cursor, upto)
		}
		return cursor >= upto/3
	})
	kill("while moving", func(pending bool, _, _, moved int64) bool {
		if moved >= processed {
			t.Fatalf("every processed event moved before the kill: nothing to test")
		}
		return !pending && moved >= processed/3
	})
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("move_history(250): %d calls, %d failed across the kills", r.calls, r.failed)
	live.setPhase("after")
	time.Sleep(300 * time.Millisecond)
	live.Stop()

	live.check(t, 0) // calls wait out the kills: no bound on latency
	checkUpgraded(t, l, live.createdKeys())
	checkOrderingKept(t, l.pool)
}

// TestStorageUpgradeOldSQLHandler: a sql: handler written before storage v2
// (app.on_webhook(webhooks.events), the table, which the upgrade renames to
// webhooks.inbox) still runs after the upgrade, on the events stored before
// it and after: through process_pending() under its new signature, and
// through `pginbox serve` (sql:app.on_webhook) in both lease modes.
func TestStorageUpgradeOldSQLHandler(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"process_pending", "serve row-lock", "serve two-phase"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			db, conf := emptyDB(t)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
				t.Fatal(err)
			}
			migrateToBefore(t, db, storageV2Marker)
			pool := PoolFor(t, conf.URL(), 4)
			execSQL(t, pool, sideTableSQL)
			ingestMany(t, pool, "legacy", "before_", "thing.happened", 20, "", "")
			if err := pginbox.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM pg_proc WHERE oid = to_regprocedure('app.on_webhook(webhooks.inbox)')`); n != 1 {
				t.Fatal("the old handler does not take webhooks.inbox after the upgrade")
			}
			ingestMany(t, pool, "legacy", "after_", "thing.happened", 10, "", "")
			if via == "process_pending" {
				ran := processPending(t, pool, "app.on_webhook(webhooks.inbox)", "w", 100)
				if len(ran) != 30 {
					t.Fatalf("process_pending ran %d events, want 30: %+v", len(ran), ran)
				}
				for _, r := range ran {
					if r.Outcome != "processed" {
						t.Fatalf("process_pending: %+v", r)
					}
				}
			} else {
				env := map[string]string{
					"DATABASE_URL":          conf.URL(),
					"PGINBOX_HANDLER":       sideTableHandler,
					"PGINBOX_PROVIDERS":     "sume=sume",
					"PGINBOX_SECRET_SUME":   sumeSecret,
					"PGINBOX_LEASE_MODE":    via[len("serve "):],
					"PGINBOX_WORKERS":       "2",
					"PGINBOX_POLL_INTERVAL": "100ms",
					"PGINBOX_LOG_LEVEL":     "warn",
				}
				r := startRunner(t, env)
				deadline := time.Now().Add(30 * time.Second)
				for queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) < 30 {
					if time.Now().After(deadline) {
						t.Fatalf("serve processed %d of 30 events in 30 s; its log:\n%s",
							queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`), r.Logs())
					}
					time.Sleep(100 * time.Millisecond)
				}
				if err := r.Terminate(30 * time.Second); err != nil {
					t.Fatal(err)
				}
				// A batch statement that cannot call the handler falls back
				// to event by event, with a warning: processed, but not as
				// it should be.
				if logs := r.Logs(); logs != "" {
					t.Errorf("serve logged warnings or errors:\n%s", logs)
				}
			}
			if n := queryInt(t, pool, `SELECT count(DISTINCT event_id) FROM app.seen`); n != 30 {
				t.Errorf("the handler ran on %d distinct events, want 30", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM app.seen`); n != 30 {
				t.Errorf("the handler ran %d times, want 30 (exactly once each)", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`); n != 0 {
				t.Errorf("%d events not processed", n)
			}
		})
	}
}

// TestStorageUpgradeRefusesForeignKey: a table of the application with a
// foreign key to webhooks.events(id) stops the upgrade before anything
// changes, naming the key: the queue's rows move into history, so the key
// would lose its rows (and an ON DELETE CASCADE delete the application's).
func TestStorageUpgradeRefusesForeignKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := emptyDB(t)
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	migrateToBefore(t, db, storageV2Marker)
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA app;
		CREATE TABLE app.receipts (event_id bigint REFERENCES webhooks.events (id) ON DELETE CASCADE)`); err != nil {
		t.Fatal(err)
	}
	err := pginbox.Migrate(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "app.receipts") || !strings.Contains(err.Error(), "2BP01") {
		t.Fatalf("migrate with a foreign key to webhooks.events: %v, want 2BP01 naming app.receipts", err)
	}
	var kind string
	if err := db.QueryRowContext(ctx, `SELECT relkind::text FROM pg_class WHERE oid = 'webhooks.events'::regclass`).Scan(&kind); err != nil || kind != "r" {
		t.Fatalf("webhooks.events after the refusal: relkind %q, %v; want the table untouched", kind, err)
	}
}

// TestEventRecordsSurviveTheMove: an event's failed attempts, its replays
// and its contradictions stay when the event moves out of the queue into
// its day of history (they referred to the table with ON DELETE CASCADE,
// which the move into history would have fired).
func TestEventRecordsSurviveTheMove(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	execSQL(t, pool, pendingHandlerSQL)
	id, _ := ingest(t, pool, "p", "flaky", "t", `{"fail": true}`)
	processPending(t, pool, "app.h(webhooks.events)", "w", 1)
	execSQL(t, pool, `UPDATE webhooks.inbox SET payload = '{}', run_after = now() WHERE id = $1`, id)
	if out := processPending(t, pool, "app.h(webhooks.events)", "w", 1); len(out) != 1 || out[0].Outcome != "processed" {
		t.Fatalf("second attempt: %+v", out)
	}
	execSQL(t, pool, `SELECT webhooks.replay($1::bigint, 'again')`, id)
	if out := processPending(t, pool, "app.h(webhooks.events)", "w", 1); len(out) != 1 || out[0].Outcome != "processed" {
		t.Fatalf("after the replay: %+v", out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history WHERE id = $1`, id); n != 1 {
		t.Fatalf("the event is not in history (%d rows)", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.event_errors WHERE event_id = $1`, id); n != 1 {
		t.Errorf("%d failed attempts kept, want 1", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE event_id = $1`, id); n != 1 {
		t.Errorf("%d replays kept, want 1", n)
	}
}
