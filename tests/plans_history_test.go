package tests

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// utcDay is the UTC day t falls in.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// dbNow is the database's now().
func dbNow(t testing.TB, db sqlConn) time.Time {
	t.Helper()
	var now time.Time
	if err := db.QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// dayList writes days sorted, as YYYY-MM-DD.
func dayList(days map[time.Time]bool) string {
	var s []string
	for d := range days {
		s = append(s, d.Format("2006-01-02"))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// requireWindow fails unless every day slice of history in days holds a
// part of the window that starts at from: none of a day before from's UTC
// day. With scanned, the plan must also read at least one slice (the
// window's own), and at most as many past slices (up to today) as the
// window spans days plus one. Slices of days after today (created ahead by
// ensure_history_days, empty) are allowed.
func requireWindow(t testing.TB, what string, days map[time.Time]bool, from, now time.Time, scanned bool) {
	t.Helper()
	first, today := utcDay(from), utcDay(now)
	past := 0
	for d := range days {
		if d.Before(first) {
			t.Errorf("%s reaches the slice of %s, before its window (from %s): %s", what, d.Format("2006-01-02"), from.UTC().Format(time.RFC3339), dayList(days))
			return
		}
		if !d.After(today) {
			past++
		}
	}
	if limit := int(today.Sub(first).Hours()/24) + 1; scanned && (past == 0 || past > limit+1) {
		t.Errorf("%s reads %d slices up to today (%s), want 1 to %d", what, past, dayList(days), limit+1)
	}
}

// checkQuery is the query of the check name, its $1 typed as run_checks()
// binds it (a timestamptz), for EXPLAIN.
func checkQuery(t testing.TB, db sqlConn, name string) string {
	t.Helper()
	q := queryString(t, db, `SELECT query FROM webhooks.checks WHERE name = $1`, name)
	return strings.ReplaceAll(q, "$1", "$1::timestamptz")
}

// explainJSON runs EXPLAIN (ANALYZE, FORMAT JSON) of query on db.
func explainJSON(t testing.TB, db sqlConn, query string, args ...any) pgtest.PlanNode {
	t.Helper()
	var raw string
	if err := db.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		t.Fatalf("explain: %v\n%s", err, query)
	}
	return pgtest.ParsePlan(t, raw)
}

// planText runs EXPLAIN (ANALYZE) of query on db, for failure messages.
func planText(t testing.TB, db sqlConn, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(context.Background(), "EXPLAIN (ANALYZE, COSTS OFF) "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestWindowViewsReadOnlyTheirDays: each materialized view the checks read
// reads, of ten days of history, only the day slices its window reaches,
// and queue_health none at all (its status filters leave the processed
// history out). The window's start is a constant when a refresh is planned
// (webhooks._window_start), so a refresh opens and locks no other slice
// either: written as now() - the window, the executor pruned the slices
// ("Subplans Removed") only after the planner had opened every one. Every
// materialized view that reads webhooks.events has its window here.
func TestWindowViewsReadOnlyTheirDays(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 10, 500)
	for i := 0; i < 20; i++ {
		ingest(t, pool, "stripe", fmt.Sprintf("q%d", i), "invoice.paid", `{}`)
	}
	execSQL(t, pool, `ANALYZE webhooks.inbox`)
	windows := map[string]time.Duration{
		"traffic_5m": 24 * time.Hour, "latency_1h": 24 * time.Hour, "payload_15m": 15 * time.Minute,
		"expectation_health": 24 * time.Hour, "queue_health": 0,
	}
	rows, err := pool.Query(context.Background(), `SELECT matviewname, definition FROM pg_matviews WHERE schemaname = 'webhooks' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type view struct{ Name, Def string }
	views, err := pgx.CollectRows(rows, pgx.RowToStructByPos[view])
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		window, ok := windows[v.Name]
		if !ok {
			if strings.Contains(v.Def, "webhooks.events") || strings.Contains(v.Def, "webhooks.history") {
				t.Errorf("%s reads the events: give its window here", v.Name)
			}
			continue
		}
		delete(windows, v.Name)
		now := dbNow(t, pool)
		query := strings.TrimSuffix(strings.TrimSpace(v.Def), ";")
		days, _ := pgtest.HistoryReads(t, explainJSON(t, pool, query))
		if window == 0 {
			if len(days) > 0 {
				t.Errorf("%s reads history (%s), want the queue alone", v.Name, dayList(days))
			}
			continue
		}
		requireWindow(t, v.Name, days, now.Add(-window), now, true)
		// The bound is a constant when the refresh is planned
		// (webhooks._window_start), so the planner opens no other slice.
		tx := frozen(t, pool)
		execOn(t, tx, `SELECT webhooks.refresh_view($1)`, v.Name)
		requireWindow(t, v.Name+"'s refresh", pgtest.HistoryDaysLocked(t, tx), dbNow(t, tx).Add(-window), now, false)
		if err := tx.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", v.Name, planText(t, pool, query))
		}
	}
	for name := range windows {
		t.Errorf("no materialized view %s", name)
	}
}

// TestRefreshViewReadsNoEvents: refresh_view() takes its high-water mark
// from the events' id sequence, not from max(id) over webhooks.events: a
// refresh of queue_health (which reads the queue alone) opens no day slice
// of history, and the mark is the last id handed out.
func TestRefreshViewReadsNoEvents(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 5, 100)
	ingest(t, pool, "stripe", "after", "invoice.paid", `{}`)
	tx := frozen(t, pool)
	execOn(t, tx, `SELECT webhooks.refresh_view('queue_health')`)
	if locked := pgtest.HistoryDaysLocked(t, tx); len(locked) > 0 {
		t.Fatalf("refresh_view('queue_health') opened the slices of %s, want none", dayList(locked))
	}
	var mark, last int64
	if err := tx.QueryRow(context.Background(), `SELECT r.events_high_water, pg_sequence_last_value('webhooks.events_id_seq')
		FROM webhooks.view_refreshes AS r WHERE r.view_name = 'queue_health'`).Scan(&mark, &last); err != nil {
		t.Fatal(err)
	}
	if mark != last || mark < 600 {
		t.Fatalf("high-water mark %d, want the sequence's last value %d", mark, last)
	}
}

// TestRefreshEventTypesReadsItsWindow: _refresh_event_types() plans its
// read with the bound as a constant, so the planner opens only the slices
// from it on: six weeks back on its first run (of 50 days of history),
// then from 10 minutes before the previous run. Its first run sees the
// providers of the last six weeks, which traffic_last_hour lists.
func TestRefreshEventTypesReadsItsWindow(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 50, 20)
	tx := frozen(t, pool)
	now := dbNow(t, tx)
	execOn(t, tx, `SELECT webhooks.refresh_view('event_types')`)
	requireWindow(t, "the first run", pgtest.HistoryDaysLocked(t, tx), now.Add(-42*24*time.Hour), now, false)
	var first time.Time
	if err := tx.QueryRow(context.Background(), `SELECT min(first_seen_at) FROM webhooks.event_types`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if age := now.Sub(first); age < 41*24*time.Hour || age > 42*24*time.Hour {
		t.Fatalf("first run: first seen %s ago, want the six weeks it reads", age)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	tx = frozen(t, pool)
	now = dbNow(t, tx)
	execOn(t, tx, `SELECT webhooks.refresh_view('event_types')`)
	requireWindow(t, "the next run", pgtest.HistoryDaysLocked(t, tx), now.Add(-10*time.Minute), now, false)
}

// TestTrafficLastHourPlan: traffic_last_hour's query, which runs five times
// per run_checks() (now and four weeks back), lists the providers from
// webhooks.event_types and counts the hour it judges: the queue and the day
// slices of history that hold the hour, read through an index on
// received_at, never the other days of 35. Its bounds are constants when it
// is planned ($1 bound, the hour's start computed in UTC), so the planner
// opens no other slice either. (On the single events table, written as an
// EXISTS on received_at < $1 - 1 hour, the first-event probe planned as a
// sequential scan of the table per provider and status: 3.4 s per
// evaluation at 1,000,000 events.)
func TestTrafficLastHourPlan(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 35, 2000)
	execSQL(t, pool, `SELECT webhooks.refresh_view('event_types')`)
	query := checkQuery(t, pool, "traffic_last_hour")
	now := dbNow(t, pool)
	for _, at := range []time.Time{now, now.Add(-28 * 24 * time.Hour)} {
		plan := explainJSON(t, pool, query, at)
		days, seq := pgtest.HistoryReads(t, plan)
		requireWindow(t, fmt.Sprintf("traffic_last_hour at %s", at.UTC().Format(time.RFC3339)), days, at.Add(-time.Hour), at, true)
		var types bool
		plan.Walk(func(n pgtest.PlanNode) {
			types = types || n.RelationName == "event_types"
		})
		for _, r := range seq {
			if strings.HasPrefix(r, "history") {
				t.Errorf("traffic_last_hour at %s reads %s sequentially", at, r)
			}
		}
		if !types {
			t.Errorf("traffic_last_hour at %s does not list the providers from event_types", at)
		}
		tx := frozen(t, pool)
		execOn(t, tx, `SELECT count(*) FROM webhooks._check_rows_at((SELECT query FROM webhooks.checks WHERE name = 'traffic_last_hour'), $1)`, at)
		requireWindow(t, fmt.Sprintf("traffic_last_hour's planner at %s", at.UTC().Format(time.RFC3339)),
			pgtest.HistoryDaysLocked(t, tx), at.Add(-time.Hour), at, false)
		if err := tx.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.Fatalf("plan at %s:\n%s", at, planText(t, pool, query, at))
		}
	}
	// The providers of those 35 days are listed, and judged on the hour.
	var listed []string
	rows, err := pool.Query(context.Background(), `SELECT r.key FROM webhooks._check_rows_at(
		(SELECT query FROM webhooks.checks WHERE name = 'traffic_last_hour'), now()) AS r WHERE r.key IS NOT NULL ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if listed, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if want := []string{"github", "shopify", "stripe", "sume"}; !slices.Equal(listed, want) {
		t.Fatalf("listed %v, want %v", listed, want)
	}
}

// TestStalenessChecksReadOneDay: view_staleness_seconds and
// refresh_age_seconds look for the first event a view has not seen among
// those of the last day only: with a view that has seen nothing of ten days
// of history, they read (and the planner opens) the slices from yesterday
// on, never the older ones, and still find the day-old unseen event.
func TestStalenessChecksReadOneDay(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 10, 300)
	refreshViews(t, pool)
	execSQL(t, pool, `UPDATE webhooks.view_refreshes SET events_high_water = 0`)
	for _, name := range []string{"view_staleness_seconds", "refresh_age_seconds"} {
		query := checkQuery(t, pool, name)
		now := dbNow(t, pool)
		days, _ := pgtest.HistoryReads(t, explainJSON(t, pool, query, now))
		requireWindow(t, name, days, now.Add(-24*time.Hour), now, true)
		tx := frozen(t, pool)
		var value float64
		if err := tx.QueryRow(context.Background(), `SELECT webhooks._check_value(query) FROM webhooks.checks WHERE name = $1`, name).Scan(&value); err != nil {
			t.Fatal(err)
		}
		requireWindow(t, name+"'s planner", pgtest.HistoryDaysLocked(t, tx), now.Add(-24*time.Hour), now, false)
		if value < 23*3600 || value > 24*3600 {
			t.Errorf("%s = %v, want the age of the first unseen event of the last day (about a day)", name, value)
		}
		if err := tx.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.Fatalf("%s:\n%s", name, planText(t, pool, query, now))
		}
	}
}

// TestContradictionsReadTheirWindow: reconcile()'s contradictions pass
// (_record_contradictions) reads the events received since `since` (the
// slices from since's day on) and looks a job's earlier terminal event up
// in the 30 days before it, through each slice's job index: of 40 days of
// history the planner opens only those, and a second terminal event is
// flagged when the first came within the 30 days, not when it came before.
// The plans are the function's own statement's, as auto_explain logs it.
func TestContradictionsReadTheirWindow(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	pgtest.SeedHistoryDays(t, pool, 40, 40)
	// A second terminal event for a job of 5 days ago and one of 35 days ago.
	for _, ago := range []int{5, 35} {
		job := queryString(t, pool, `SELECT payload ->> 'job_id' FROM webhooks.history
			WHERE event_type = 'job.completed' AND received_at < now() - make_interval(days => $1)
			ORDER BY received_at DESC LIMIT 1`, ago)
		ingest(t, pool, "sume", "again_"+job, "job.failed", fmt.Sprintf(`{"job_id": %q, "status": "ERROR", "error": {"code": "x"}}`, job))
	}
	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_analyze = on`, `SET auto_explain.log_format = json`,
		`SET client_min_messages = log`)
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	now := dbNow(t, tx)
	since := now.Add(-time.Hour)
	var found string
	if err := tx.QueryRow(ctx, `SELECT webhooks._record_contradictions($1)::text`, since).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(found, `"duplicate_terminal": 1`) {
		t.Fatalf("_record_contradictions: %s, want the one duplicate whose first came within 30 days", found)
	}
	lookback := since.Add(-30 * 24 * time.Hour)
	requireWindow(t, "the contradictions pass's planner", pgtest.HistoryDaysLocked(t, tx), lookback, now, false)
	var plan string
	for _, n := range notes() {
		if strings.Contains(n, "duplicate_terminal") && strings.Contains(n, `"Plan"`) {
			plan = n
		}
	}
	if plan == "" {
		t.Fatalf("auto_explain logged no plan of the contradictions statement:\n%s", strings.Join(notes(), "\n"))
	}
	days, seq := pgtest.HistoryReads(t, pgtest.ParsePlan(t, plan))
	requireWindow(t, "the contradictions pass", days, lookback, now, false)
	for _, r := range seq {
		// The events since `since` may be read whole; the look-back's
		// slices only through their job index.
		if d, ok := strings.CutPrefix(r, "history_"); ok && d < utcDay(since).Format("20060102") {
			t.Errorf("the look-back reads %s sequentially", r)
		}
	}
	if !strings.Contains(plan, "_provider_case_id_idx") {
		t.Errorf("the look-up of earlier terminal events does not read the slices' job index:\n%s", plan)
	}
	if t.Failed() {
		t.Logf("plan:\n%s", plan)
	}
}

// TestChecksReadingEventsHaveAWindow: every check whose query reads the
// events (webhooks.events, or the queue or history behind it) is one whose
// plan a test here pins to its window; the others read the views. A new
// check that reads the events joins this list with a plan test.
func TestChecksReadingEventsHaveAWindow(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rows, err := pool.Query(context.Background(), `SELECT name FROM webhooks.checks
		WHERE query ~ '(FROM|JOIN)\s+webhooks\.(events|inbox|history)\M' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// traffic_last_hour: TestTrafficLastHourPlan; the other two:
	// TestStalenessChecksReadOneDay.
	if want := []string{"refresh_age_seconds", "traffic_last_hour", "view_staleness_seconds"}; !slices.Equal(names, want) {
		t.Fatalf("checks reading the events: %v, want %v (give a new one a plan test)", names, want)
	}
}
