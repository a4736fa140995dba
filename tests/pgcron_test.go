package tests

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
)

// TestScheduleWithPgCron: on a cluster started with pg_cron preloaded,
// schedule_with_pg_cron() creates the four upkeep jobs, their commands run
// (the history job moves a processed event out of the queue into its day of
// history, and the prune job creates the coming days' slices of history:
// no runner is needed to keep the layout healthy),
// pg_cron itself runs the reconcile job, and unschedule_pg_cron() removes
// them. Without pg_cron the function raises a clear error.
func TestScheduleWithPgCron(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Without pg_cron: a clear error, nothing else needed.
	plain := NewPool(t, 1)
	_, err := plain.Exec(ctx, `SELECT * FROM webhooks.schedule_with_pg_cron()`)
	wantPgError(t, err, "42704", "pg_cron is not installed")
	if n := queryInt(t, plain, `SELECT webhooks.unschedule_pg_cron()`); n != 0 {
		t.Fatalf("unschedule without pg_cron: %d", n)
	}

	binDir := os.Getenv("PGINBOX_PG_BINDIR")
	if binDir == "" {
		binDir, _ = localpg.FindBinDir()
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(binDir), "lib", "pg_cron.so")); err != nil {
		t.Skipf("pg_cron is not installed next to %s (Debian: apt-get install postgresql-15-cron): %v", binDir, err)
	}
	dir, err := os.MkdirTemp("", "pginbox-cron-")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{"shared_preload_libraries": "pg_cron", "cron.database_name": "pginbox_cron"}
	for k, v := range localpg.TestSettings {
		settings[k] = v
	}
	c, err := localpg.Start(ctx, localpg.Options{Dir: dir, Settings: settings, BinDir: binDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopMode(context.Background(), "immediate"); _ = c.Remove() })
	admin := PoolFor(t, c.URL("postgres"), 1)
	execSQL(t, admin, `CREATE DATABASE pginbox_cron`)
	pool := PoolFor(t, c.URL("pginbox_cron"), 4)
	db := stdlib.OpenDBFromPool(pool)
	defer func(db *sql.DB) { db.Close() }(db)
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	execSQL(t, pool, `CREATE EXTENSION pg_cron`)

	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.schedule_with_pg_cron()`); n != 4 {
		t.Fatalf("scheduled %d jobs, want 4", n)
	}
	execSQL(t, pool, `SELECT webhooks.schedule_with_pg_cron()`) // again: updates, no new jobs
	if n := queryInt(t, pool, `SELECT count(*) FROM cron.job WHERE jobname LIKE 'pginbox_%' AND database = 'pginbox_cron'`); n != 4 {
		t.Fatalf("cron.job rows %d, want 4 after scheduling twice", n)
	}
	// A processed event waits in the queue, and a coming day has lost its
	// slice of history: the jobs' commands put both right.
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'cron_1', 't', '{}')`)
	execSQL(t, pool, `UPDATE webhooks.inbox SET status = 'processed', processed_at = now() WHERE external_id = 'cron_1'`)
	day := time.Now().UTC().AddDate(0, 0, 3).Format("20060102")
	execSQL(t, pool, `DROP TABLE webhooks.history_`+day)
	// Every job's command works as written.
	rows, err := pool.Query(ctx, `SELECT command FROM cron.job WHERE jobname LIKE 'pginbox_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for rows.Next() {
		var cmd string
		_ = rows.Scan(&cmd)
		commands = append(commands, cmd)
	}
	rows.Close()
	for _, cmd := range commands {
		if _, err := pool.Exec(ctx, cmd); err != nil {
			t.Fatalf("job command %q: %v", cmd, err)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results`); n == 0 {
		t.Fatal("the checks job's command recorded no results")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history WHERE external_id = 'cron_1'`); n != 1 {
		t.Fatalf("the history job's command left the processed event in the queue (%d in history)", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_class WHERE oid = to_regclass('webhooks.history_`+day+`')`); n != 1 {
		t.Fatalf("the prune job's command did not create the slice of %s again", day)
	}
	// pg_cron runs the reconcile job on the next minute.
	waitFor(t, 90*time.Second, "pg_cron to run the reconcile job", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs WHERE trigger = 'pg_cron'`) >= 1
	})
	if n := queryInt(t, pool, `SELECT webhooks.unschedule_pg_cron()`); n != 4 {
		t.Fatalf("unscheduled %d jobs, want 4", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM cron.job WHERE jobname LIKE 'pginbox_%'`); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}
