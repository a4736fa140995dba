package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// noticeConn opens a connection of its own that collects the NOTICEs the
// server sends it.
func noticeConn(t testing.TB, pool *pgxpool.Pool) (*pgx.Conn, func() []string) {
	t.Helper()
	return noticeConnURL(t, pool.Config().ConnString())
}

// TestViewsRefreshableConcurrently: every materialized view of the schema is
// registered for refresh and has the unique index on plain columns that
// REFRESH ... CONCURRENTLY needs; refresh_views() refreshes every registered
// view and records it.
func TestViewsRefreshableConcurrently(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()

	rows, err := pool.Query(ctx, `
		SELECT m.matviewname,
		       EXISTS (SELECT FROM pg_index i
		               WHERE i.indrelid = format('webhooks.%I', m.matviewname)::regclass
		                 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL),
		       EXISTS (SELECT FROM webhooks.view_refreshes r WHERE r.view_name = m.matviewname)
		FROM pg_matviews m WHERE m.schemaname = 'webhooks' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type mv struct {
		Name             string
		UniquePlainIndex bool
		Registered       bool
	}
	views, err := pgx.CollectRows(rows, pgx.RowToStructByPos[mv])
	if err != nil {
		t.Fatal(err)
	}
	if len(views) < 5 {
		t.Fatalf("only %d materialized views in schema webhooks: %v", len(views), views)
	}
	for _, v := range views {
		if !v.UniquePlainIndex {
			t.Errorf("%s has no unique index on plain columns: REFRESH CONCURRENTLY fails", v.Name)
		}
		if !v.Registered {
			t.Errorf("%s is not registered in webhooks.view_refreshes: refresh_views() skips it", v.Name)
		}
	}

	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes WHERE refreshes > 0 OR refreshed_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d views recorded as refreshed before any refresh", n)
	}
	refreshViews(t, pool)
	refreshViews(t, pool)
	registered := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes
		WHERE refreshes = 2 AND refreshed_at > now() - interval '1 minute' AND duration_ms >= 0`); n != registered {
		t.Fatalf("%d of %d views recorded two refreshes", n, registered)
	}
	for _, v := range views {
		if !v.Registered {
			continue
		}
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT webhooks.refresh_view($1)`, "webhooks."+v.Name).Scan(&ok); err != nil || !ok {
			t.Errorf("refresh_view(webhooks.%s) = %v, %v", v.Name, ok, err)
		}
	}
}

// TestRefreshViewErrors: an unknown name is a clear error; a view that is
// not populated (REFRESH CONCURRENTLY refuses those) is filled once; the
// checks reading an unpopulated view fail alone without aborting the run.
func TestRefreshViewErrors(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()

	_, err := pool.Exec(ctx, `SELECT webhooks.refresh_view('events')`)
	wantPgError(t, err, "42704", "events is not a registered view; the views are: ")
	_, err = pool.Exec(ctx, `SELECT webhooks.refresh_view(NULL)`)
	wantPgError(t, err, "22004", "name must not be null")

	execSQL(t, pool, `REFRESH MATERIALIZED VIEW webhooks.traffic_5m WITH NO DATA`)
	got, _ := breaches(runChecks(t, pool))
	for _, name := range got {
		q := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE name = $1 AND query LIKE '%traffic_5m%'`, name)
		if q != 1 {
			t.Errorf("%s breached though it does not read the unpopulated view", name)
		}
	}
	if len(got) == 0 {
		t.Fatal("no check failed on an unpopulated view")
	}
	traffic(t, pool, "acme", "e", 3)
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT webhooks.refresh_view('traffic_5m')`).Scan(&ok); err != nil || !ok {
		t.Fatalf("refresh_view of an unpopulated view: %v, %v", ok, err)
	}
	if n := queryInt(t, pool, `SELECT coalesce(sum(received), 0) FROM webhooks.traffic_5m`); n != 3 {
		t.Fatalf("traffic_5m counts %d events, want 3", n)
	}
	reconcilePass(t, pool)
	refreshViews(t, pool)
	if got, detail := breaches(runChecks(t, pool)); len(got) > 0 {
		t.Fatalf("after refresh: breached %s", detail)
	}
}

// TestRefreshSkipsWhenLocked: while one transaction refreshes, a second
// refresher returns at once (NOTICE, false) instead of queueing behind it,
// and readers of the views are not blocked.
func TestRefreshSkipsWhenLocked(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	traffic(t, pool, "acme", "e", 10)

	first, _ := noticeConn(t, pool)
	second, notices := noticeConn(t, pool)
	if _, err := first.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(ctx, `SELECT webhooks.refresh_views()`); err != nil {
		t.Fatal(err)
	}

	// The first refresher's transaction is still open. If the second waited
	// for it, these calls would hang until the timeout.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := second.Exec(sctx, `SELECT webhooks.refresh_views()`); err != nil {
		t.Fatalf("second refresh_views: %v", err)
	}
	var refreshed bool
	if err := second.QueryRow(sctx, `SELECT webhooks.refresh_view('queue_health')`).Scan(&refreshed); err != nil {
		t.Fatalf("second refresh_view: %v", err)
	}
	if refreshed {
		t.Fatal("refresh_view refreshed while another transaction held the refresh lock")
	}
	if got := notices(); len(got) != 2 || !strings.Contains(got[0], "skipped") {
		t.Fatalf("notices %q, want two 'skipped' notices", got)
	}
	// CONCURRENTLY: the views stay readable while being refreshed.
	if _, err := second.Exec(sctx, `SET lock_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Exec(sctx, `SELECT count(*) FROM webhooks.traffic_5m, webhooks.queue_health`); err != nil {
		t.Fatalf("reading the views during a refresh: %v", err)
	}
	if _, err := first.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}

	registered := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes WHERE refreshes = 1`); n != registered {
		t.Fatalf("%d of %d views refreshed exactly once, want all (the skipped pass refreshes nothing)", n, registered)
	}
	if _, err := second.Exec(ctx, `SELECT webhooks.refresh_views()`); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes WHERE refreshes = 2`); n != registered {
		t.Fatalf("once the lock is free: %d of %d views refreshed again", n, registered)
	}

	// Two refreshers racing: no errors, and every call either refreshed
	// every view or skipped.
	var skipped atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		conn, notices := noticeConn(t, pool)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if _, err := conn.Exec(ctx, `SELECT webhooks.refresh_views()`); err != nil {
					errs <- err
					return
				}
			}
			skipped.Add(int64(len(notices())))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing refresh_views: %v", err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.view_refreshes WHERE refreshes = $1`, 2+20-skipped.Load()); n != registered {
		t.Fatalf("after 20 racing calls of which %d skipped: %d of %d views have the matching refresh count",
			skipped.Load(), n, registered)
	}
	t.Logf("racing refreshers: %d of 20 calls skipped", skipped.Load())
}

// TestRefreshWhileIngesting: refresh_views() running over and over while
// several goroutines ingest neither fails nor blocks ingestion for more than
// a moment; the views then match the table.
func TestRefreshWhileIngesting(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 12)
	ctx := context.Background()
	// Enough rows in the window that a refresh takes a while.
	ingestMany(t, pool, "bulk", "b", "thing.happened", 20000, "", "")
	execSQL(t, pool, `UPDATE webhooks.events
		SET status = 'processed', attempts = 1, claimed_at = now(), processed_at = now()
		WHERE id % 2 = 0`)

	var refreshing atomic.Bool
	stop := make(chan struct{})
	var (
		mu          sync.Mutex
		maxDuring   time.Duration
		callsDuring int
		calls       int
		ingestErrs  []error
	)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				during := refreshing.Load()
				start := time.Now()
				_, err := pool.Exec(ctx, `SELECT * FROM webhooks.ingest_webhook($1, $2, 'thing.happened', '{"n": 1}')`,
					fmt.Sprintf("live%d", w%2), fmt.Sprintf("w%d-%d", w, i))
				d := time.Since(start)
				during = during || refreshing.Load()
				mu.Lock()
				calls++
				if err != nil {
					ingestErrs = append(ingestErrs, err)
				}
				if during {
					callsDuring++
					maxDuring = max(maxDuring, d)
				}
				mu.Unlock()
			}
		}()
	}

	rows, err := pool.Query(ctx, `SELECT view_name FROM webhooks.view_refreshes ORDER BY view_name`)
	if err != nil {
		t.Fatal(err)
	}
	views, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	held := holdConn(t, pool)
	var refreshes []time.Duration
	for i := 0; i < 7; i++ {
		refreshing.Store(true)
		start := time.Now()
		switch {
		case i == 6:
			// A refresh whose transaction stays open for 3 s: whatever it
			// locks, it holds that long. Ingestion must not notice.
			for _, q := range []string{`BEGIN`, `SELECT webhooks.refresh_views()`, `SELECT pg_sleep(3)`, `COMMIT`} {
				if _, err := held.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		case i%2 == 0:
			refreshViews(t, pool)
		default: // the runner's way: one view per transaction
			for _, v := range views {
				execSQL(t, pool, `SELECT webhooks.refresh_view($1)`, v)
			}
		}
		refreshes = append(refreshes, time.Since(start))
		refreshing.Store(false)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	if len(ingestErrs) > 0 {
		t.Fatalf("%d ingest errors during refreshes, first: %v", len(ingestErrs), ingestErrs[0])
	}
	if callsDuring < 10 {
		t.Fatalf("only %d ingest calls overlapped a refresh: the test did not exercise the overlap", callsDuring)
	}
	t.Logf("refreshes took %v; %d ingest calls, %d during a refresh, the longest of those %v",
		refreshes, calls, callsDuring, maxDuring)
	// Generous: the machine is small and shared. A refresh that locked the
	// events table against writes would hold ingestion for 3 s and more.
	if maxDuring > 2*time.Second {
		t.Errorf("an ingest call took %v during a refresh", maxDuring)
	}

	refreshViews(t, pool)
	if a, b := queryInt(t, pool, `SELECT sum(received) FROM webhooks.traffic_5m`), queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); a != b {
		t.Fatalf("traffic_5m counts %d events, the table holds %d", a, b)
	}
	if a, b := queryInt(t, pool, `SELECT sum(pending) FROM webhooks.queue_health`), queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'pending'`); a != b {
		t.Fatalf("queue_health counts %d pending, the table holds %d", a, b)
	}
}

// TestViewContents checks what each view says about a small known data set.
func TestViewContents(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()

	// acme: 5 processed (one backfilled, one retried), 1 pending, 1
	// processing, 1 dead, 1 exhausted (retried too).
	ingestMany(t, pool, "acme", "p", "thing.happened", 4, `jsonb_build_object('created_at', '2020-01-01T00:00:00Z')`, "")
	execSQL(t, pool, `SELECT * FROM webhooks.ingest_webhook('acme', 'bf', 'thing.happened', '{}', 'backfill')`)
	execSQL(t, pool, `INSERT INTO webhooks.expectations (provider, external_id, deadline) VALUES
		('acme', 'p1', now() + interval '1 hour'),
		('acme', 'open', now() + interval '1 hour'),
		('acme', 'late', now() - interval '5 minutes'),
		('acme', 'lost', now() - interval '3 hours'),
		('acme', 'gone', now() - interval '3 hours')`)
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES
		('acme', 'gone', '404'), ('acme', 'p2', 'wrongly')`)
	c := claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', $2, 'oops')`, c[0].ID, c[0].Attempts)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now()`)
	processAll(t, pool, "w")
	ingest(t, pool, "acme", "pending", "thing.happened", `{}`)
	ingest(t, pool, "acme", "processing", "other.thing", `{}`)
	ingest(t, pool, "acme", "dead", "thing.happened", `{}`)
	ingest(t, pool, "acme", "exhausted", "thing.happened", `{}`)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() + interval '1 hour' WHERE external_id IN ('pending', 'dead', 'exhausted')`)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() - interval '1 hour' WHERE external_id = 'processing'`)
	claim(t, pool, "w2", 1, "1 minute")
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1, run_after = now() - interval '2 hours' WHERE external_id = 'dead'`)
	c = claim(t, pool, "w3", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w3', $2, 'poison')`, c[0].ID, c[0].Attempts)
	execSQL(t, pool, `UPDATE webhooks.events SET attempts = 2, max_attempts = 2 WHERE external_id = 'exhausted'`)
	// A tombstone that met its event two days ago no longer counts.
	ingest(t, pool, "old", "o1", "thing.happened", `{}`)
	processAll(t, pool, "w4")
	backdate(t, pool, "2 days", "provider = 'old'")
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason, created_at)
		VALUES ('old', 'o1', '404', now() - interval '2 days')`)
	// A busy provider: the stated time is read from a sample of 2,000.
	ingestMany(t, pool, "busy", "b", "thing.happened", 6000, `jsonb_build_object('timestamp', extract(epoch FROM now())::bigint - 30)`, "")
	// A Sume job that failed without saying why.
	ingest(t, pool, "sume", "job_1", "job.failed", `{"job_id": "job_1", "status": "ERROR"}`)
	ingest(t, pool, "sume", "job_2", "job.failed", `{"job_id": "job_2", "status": "ERROR", "error": {"code": "oom"}}`)
	refreshViews(t, pool)

	type row = map[string]any
	one := func(q string) row {
		t.Helper()
		rows, err := pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return r
	}
	want := func(name string, got row, exp row) {
		t.Helper()
		for k, v := range exp {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("%s.%s = %v, want %v", name, k, got[k], v)
			}
		}
	}

	want("traffic_5m", one(`SELECT sum(received)::int AS received, sum(backfilled)::int AS backfilled,
		sum(retried)::int AS retried, sum(processed)::int AS processed, sum(dead)::int AS dead,
		sum(waiting)::int AS waiting, max(wait_p50_s) IS NOT NULL AS latency
		FROM webhooks.traffic_5m WHERE provider = 'acme'`),
		row{"received": 9, "backfilled": 1, "retried": 3, "processed": 5, "dead": 1, "waiting": 3, "latency": true})
	want("latency_1h", one(`SELECT processed, wait_p99_s >= 0 AS waited, handler_p99_s >= 0 AS handled
		FROM webhooks.latency_1h WHERE provider = 'acme'`),
		row{"processed": 5, "waited": true, "handled": true})
	want("queue_health", one(`SELECT pending, exhausted, processing, dead_24h,
		oldest_run_after > now() AS future, oldest_locked_until > now() AS leased
		FROM webhooks.queue_health WHERE provider = 'acme'`),
		row{"pending": 2, "exhausted": 1, "processing": 1, "dead_24h": 1, "future": true, "leased": true})
	want("expectation_health", one(`SELECT expected_open, gaps, gaps_over_1h, tombstones_24h, tombstones_with_event_24h,
		backfills_24h, backfills_unexpected_24h, oldest_gap_deadline < now() - interval '2 hours' AS oldest
		FROM webhooks.expectation_health WHERE provider = 'acme'`),
		row{"expected_open": 3, "gaps": 2, "gaps_over_1h": 1, "tombstones_24h": 2, "tombstones_with_event_24h": 1,
			"backfills_24h": 1, "backfills_unexpected_24h": 1, "oldest": true})
	want("payload_15m acme", one(`SELECT received, timed, event_timed, failed_without_error, skew_p50_s < -86400 AS behind,
		delay_p99_s IS NULL AS no_delay FROM webhooks.payload_15m WHERE provider = 'acme'`),
		row{"received": 9, "timed": 4, "event_timed": 0, "failed_without_error": 0, "behind": true, "no_delay": true})
	want("payload_15m sume", one(`SELECT received, failed_without_error FROM webhooks.payload_15m WHERE provider = 'sume'`),
		row{"received": 2, "failed_without_error": 1})
	want("event_types", one(`SELECT count(*) AS types, bool_and(first_seen_at <= last_seen_at) AS ordered
		FROM webhooks.event_types`),
		row{"types": 5, "ordered": true})
	want("payload_15m busy", one(`SELECT received, timed, event_timed, round(skew_p50_s) AS skew, round(delay_p99_s) AS delay
		FROM webhooks.payload_15m WHERE provider = 'busy'`),
		row{"received": 6000, "timed": 2000, "event_timed": 2000, "skew": -30, "delay": 30})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectation_health WHERE provider = 'old'`); n != 0 {
		t.Errorf("expectation_health has a row for a tombstone that met its event 2 days ago")
	}
}

// TestPayloadTime covers the payload time parser the payload checks use.
func TestPayloadTime(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	for _, tc := range []struct {
		payload string
		want    string // UTC, or "" for NULL
	}{
		{`{"created_at": "2024-05-06T07:08:09Z"}`, "2024-05-06 07:08:09"},
		{`{"created_at": "2024-05-06T07:08:09.123+02:00"}`, "2024-05-06 05:08:09.123"},
		{`{"timestamp": 1715000000}`, "2024-05-06 12:53:20"},
		{`{"timestamp": "1715000000"}`, "2024-05-06 12:53:20"},
		{`{"created": 1715000000123}`, "2024-05-06 12:53:20.123"},
		{`{"occurred_at": "2024-05-06 07:08:09Z"}`, "2024-05-06 07:08:09"},
		{`{"created_at": "2024-05-06t07:08:09.123456789z"}`, "2024-05-06 07:08:09.123"},
		{`{"created_at": "2024-05-06T07:08:09+0530"}`, "2024-05-06 01:38:09"},
		{`{"created_at": "2024-05-06T07:08:09-15"}`, "2024-05-06 22:08:09"},
		{`{"created_at": "2024-05-06T07:08:60Z"}`, "2024-05-06 07:09:00"},
		{`{"created_at": "2024-02-29T00:00:00Z"}`, "2024-02-29 00:00:00"},
		{`{"created_at": "2024-05-06 07:08Z"}`, ""},
		{`{"created_at": "2023-02-29T00:00:00Z"}`, ""},
		{`{"created_at": "2024-04-31T00:00:00Z"}`, ""},
		{`{"created_at": "2024-13-01T00:00:00Z"}`, ""},
		{`{"created_at": "0000-01-01T00:00:00Z"}`, ""},
		{`{"created_at": "2024-05-06T24:00:00Z"}`, ""},
		{`{"created_at": "2024-05-06T07:60:00Z"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09.Z"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09-16:00"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09+05:60"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09 +05:00"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09ZZ"}`, ""},
		{`{"created_at": "2024-05-06T07:08:09+05:00:00"}`, ""},
		{`{"created_at": "２０２４-05-06T07:08:09Z"}`, ""},
		{`{"created_at": null, "timestamp": 1715000000}`, "2024-05-06 12:53:20"},
		{`{"created_at": "2020-01-01T00:00:00Z", "timestamp": 1715000000}`, "2024-05-06 12:53:20"},
		{`{"created_at": "2024-02-30T00:00:00Z"}`, ""},
		{`{"created_at": "yesterday"}`, ""},
		{`{"created_at": 42}`, ""},
		{`{"created_at": {"seconds": 1715000000}}`, ""},
		{`{"other": "2024-05-06T07:08:09Z"}`, ""},
		{`[]`, ""},
	} {
		var got *string
		if err := pool.QueryRow(context.Background(),
			`SELECT to_char(webhooks._payload_time($1::jsonb) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.FF3')`, tc.payload).Scan(&got); err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		g := ""
		if got != nil {
			g = strings.TrimSuffix(*got, ".000")
		}
		if g != tc.want {
			t.Errorf("_payload_time(%s) = %q, want %q", tc.payload, g, tc.want)
		}
	}
	// Never an error, whatever digits land where: random digits written
	// over valid times of each shape (a raising parser would break refreshes).
	for _, tmpl := range []string{"2024-05-06T07:08:09.123+05:30", "2024-12-31 23:59:59-1500", "2024-02-29T00:00:00Z", "2024-02-29", "1715000000123"} {
		n := queryInt(t, pool, `
			SELECT count(webhooks._payload_time(jsonb_build_object('created_at', s)))
			FROM (SELECT (SELECT string_agg(CASE WHEN random() < 0.25 THEN floor(random() * 10)::text ELSE u.c END, '' ORDER BY u.i)
			              FROM unnest(string_to_array($1, NULL)) WITH ORDINALITY AS u(c, i)
			              WHERE g > 0) AS s
			      FROM generate_series(1, 5000) AS g) AS x`, tmpl)
		t.Logf("%s: %d of 5000 mutants read as a time", tmpl, n)
	}
}
