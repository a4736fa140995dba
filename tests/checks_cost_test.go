package tests

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestChecksCostAtScale measures what the checks cost on a big history: it
// seeds PGINBOX_CHECKS_COST_EVENTS processed events (e.g. 5000000) into the
// day slices of the last 35 days of webhooks.history, four providers, in
// received_at order the way move_history() leaves them, then times
// refresh_views() and run_checks() and logs the plan of traffic_last_hour's
// query. It asserts nothing about speed (the numbers go to docs/checks.md);
// it is skipped unless the variable is set, so `make test` never seeds
// millions of rows:
//
//	PGINBOX_CHECKS_COST_EVENTS=5000000 go run ./tests/cmd/withpg -- \
//	  go test -count=1 -timeout 60m ./tests -run TestChecksCostAtScale -v
func TestChecksCostAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PGINBOX_CHECKS_COST_EVENTS"))
	if n <= 0 {
		t.Skip("set PGINBOX_CHECKS_COST_EVENTS (e.g. 5000000) to measure the checks on that many events")
	}
	pool := NewPool(t, 4)
	ctx := context.Background()
	timed := func(what, sql string) time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := time.Since(start)
		t.Logf("%-40s %8.1f ms", what, float64(d.Microseconds())/1000)
		return d
	}
	start := time.Now()
	pgtest.SeedHistoryDays(t, pool, 35, n/36)
	t.Logf("%-40s %8.1f ms", "seed", float64(time.Since(start).Microseconds())/1000)
	timed("vacuum analyze", `VACUUM (ANALYZE) webhooks.history`)
	reconcilePass(t, pool)
	for i := 1; i <= 3; i++ {
		timed("refresh_views() #"+strconv.Itoa(i), `SELECT webhooks.refresh_views()`)
		timed("run_checks() #"+strconv.Itoa(i), `SELECT count(*) FROM webhooks.run_checks()`)
	}
	rows, err := pool.Query(ctx, `
		SELECT name, avg(duration_ms)::float8, max(duration_ms)::float8
		FROM webhooks.check_results GROUP BY name ORDER BY avg(duration_ms) DESC LIMIT 8`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var avg, max float64
		if err := rows.Scan(&name, &avg, &max); err != nil {
			t.Fatal(err)
		}
		t.Logf("check %-36s avg %7.1f ms, max %7.1f ms", name, avg, max)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `SELECT view_name, duration_ms::float8 FROM webhooks.view_refreshes ORDER BY view_name`)
	if err == nil {
		for rows.Next() {
			var name string
			var ms *float64
			if rows.Scan(&name, &ms) == nil && ms != nil {
				t.Logf("view %-37s last refresh %7.1f ms", name, *ms)
			}
		}
		rows.Close()
	}
	// The learned check's query, at now and four weeks ago.
	query := checkQuery(t, pool, "traffic_last_hour")
	for _, at := range []time.Time{time.Now(), time.Now().Add(-28 * 24 * time.Hour)} {
		plan, err := pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+query, at)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for plan.Next() {
			var line string
			if err := plan.Scan(&line); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		plan.Close()
		t.Logf("traffic_last_hour at %s:\n%s", at, strings.Join(lines, "\n"))
	}
	var band string
	if err := pool.QueryRow(ctx, `SELECT format('%s value %s [%s, %s] from %s weeks', range_source, value, min_ok, max_ok, history_weeks)
		FROM webhooks.check_results WHERE name = 'traffic_last_hour' ORDER BY run_at DESC LIMIT 1`).Scan(&band); err != nil {
		t.Fatal(err)
	}
	t.Logf("traffic_last_hour: %s", band)
}
