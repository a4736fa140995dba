package tests

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
)

// pgCronDatabase starts a cluster of the test's own with pg_cron preloaded
// and returns a pool on its database pginbox_cron, migrated, with the
// extension created. It skips the test where pg_cron is not installed.
func pgCronDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
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
	c, err := localpg.Start(ctx, localpg.Options{Dir: dir, Settings: settings, BinDir: binDir, Trust: true})
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
	return pool
}

// TestPgCronOnlyInstallStaysAhead: an install kept by pg_cron alone, no
// runner, a week after its migration made the first slices (none is left).
// schedule_with_pg_cron()'s prune job, run by pg_cron, creates the day
// slices of webhooks.history from yesterday to a week ahead, and a history job, run by pg_cron every minute,
// moves processed events out of the queue (webhooks.inbox) into them:
// without it nothing else would.
func TestPgCronOnlyInstallStaysAhead(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for pg_cron's next minute: skipped with -short")
	}
	pool := pgCronDatabase(t)
	ctx := context.Background()
	const coming = `
		SELECT count(*) FROM generate_series((now() AT TIME ZONE 'UTC')::date - 1,
		                                     (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day') AS d
		WHERE to_regclass('webhooks.history_' || to_char(d, 'YYYYMMDD')) IS NOT NULL`
	// The migration made a week of slices: as if that week had passed
	// with no runner, none is left.
	execSQL(t, pool, `DO $$
		DECLARE
			v_slice text;
		BEGIN
			FOR v_slice IN SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
			               WHERE i.inhparent = 'webhooks.history'::regclass LOOP
				EXECUTE format('DROP TABLE webhooks.%I', v_slice);
			END LOOP;
			DELETE FROM webhooks.history_days;
		END $$`)
	if n := queryInt(t, pool, coming); n != 0 {
		t.Fatalf("%d of the coming days' slices exist before pg_cron ran anything: the test would prove nothing", n)
	}
	id, _ := ingest(t, pool, "sume", "cron_1", "job.completed", `{"job_id": "cron_1"}`)
	processAll(t, pool, "w")

	rows, err := pool.Query(ctx, `SELECT jobname, schedule FROM webhooks.schedule_with_pg_cron(prune_schedule => '* * * * *')`)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]string{}
	for rows.Next() {
		var name, schedule string
		if err := rows.Scan(&name, &schedule); err != nil {
			t.Fatal(err)
		}
		jobs[name] = schedule
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `SELECT webhooks.unschedule_pg_cron()`) })

	t.Run("prune job creates the coming days", func(t *testing.T) {
		deadline := time.Now().Add(150 * time.Second)
		for queryInt(t, pool, coming) != 9 {
			if time.Now().After(deadline) {
				t.Fatalf("after 150 s, %d of the 9 coming days' slices exist; pginbox_prune's runs: %s",
					queryInt(t, pool, coming), cronRuns(t, pool, "pginbox_prune"))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM cron.job_run_details AS r JOIN cron.job AS j USING (jobid)
			WHERE j.jobname = 'pginbox_prune' AND r.status = 'succeeded'`); n == 0 {
			t.Error("no succeeded run of pginbox_prune: the slices came from elsewhere")
		}
	})
	t.Run("history job moves processed events", func(t *testing.T) {
		if got := jobs["pginbox_history"]; got != "* * * * *" {
			t.Fatalf("schedule_with_pg_cron() scheduled %v: want a pginbox_history job every minute (* * * * *) "+
				"calling webhooks.move_history(), or processed events never leave webhooks.inbox without the runner", jobs)
		}
		deadline := time.Now().Add(150 * time.Second)
		for queryInt(t, pool, `SELECT count(*) FROM webhooks.history WHERE id = $1`, id) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("after 150 s the processed event is not in history; pginbox_history's runs: %s",
					cronRuns(t, pool, "pginbox_history"))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox WHERE status = 'processed'`); n != 0 {
			t.Errorf("%d processed events left in the queue", n)
		}
	})
}

// cronRuns lists the runs pg_cron recorded of job: status and message.
func cronRuns(t *testing.T, pool *pgxpool.Pool, job string) string {
	t.Helper()
	var out string
	if err := pool.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(r.status || ' ' || coalesce(r.return_message, ''), '; ' ORDER BY r.start_time), 'none')
		FROM cron.job_run_details AS r JOIN cron.job AS j USING (jobid) WHERE j.jobname = $1`, job).Scan(&out); err != nil {
		t.Fatalf("cron.job_run_details: %v", err)
	}
	return out
}
