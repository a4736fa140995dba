package tests

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestBlockedSequencesPlan: webhooks.blocked_sequences (the console, the
// `pginbox ordering` command, the sequence_blocked_seconds check and the
// pginbox_blocked_sequences gauge read it live) finds its candidates in
// events_order_attention_idx and tests and counts each sequence in
// events_order_idx: never a scan of webhooks.events, however many events
// are stored or waiting; nor is the out-of-order count. 30,000 events:
// 20,000 of an unordered provider, 10,000 of an ordered one (2,000
// customers × 5), three heads failing.
func TestBlockedSequencesPlan(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.n')`)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, attempts)
		SELECT 'other', 'o' || i, 't', '{}', 'processed', now(), 1 FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num, order_held)
		SELECT 'stripe', 's' || k || '_' || n, 't', jsonb_build_object('customer', 'cus_' || k, 'n', n), 'cus_' || k, n, n > 1
		FROM generate_series(1, 2000) AS k, generate_series(1, 5) AS n`)
	execSQL(t, pool, `UPDATE webhooks.events SET attempts = 1, last_error = 'boom', run_after = now() + interval '1 minute'
		WHERE provider = 'stripe' AND order_num = 1 AND order_key IN ('cus_1', 'cus_2', 'cus_3')`)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)

	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.blocked_sequences WHERE waiting = 4`); n != 3 {
		t.Fatalf("%d blocked sequences with 4 waiting, want 3", n)
	}
	c, err := pgx.Connect(ctx, conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []struct {
		sql   string
		reads int // reads of events_order_idx: the head test, and the count when it is used
	}{
		{`EXPLAIN SELECT * FROM webhooks.blocked_sequences`, 2},
		{`EXPLAIN SELECT extract(epoch FROM now() - min(b.blocked_since)) FROM webhooks.blocked_sequences AS b`, 1},
	} {
		plan := explainLines(t, c, q.sql)
		// Only the unfinished part of a sequence is read: events_order_idx
		// holds nothing else (its predicate), so the status test is neither
		// an index condition nor a filter over processed events.
		if strings.Contains(plan, "Seq Scan on events") || !strings.Contains(plan, "events_order_attention_idx") ||
			strings.Count(plan, "Index Scan using events_order_idx") != q.reads ||
			strings.Contains(plan, "<> 'processed'") {
			t.Errorf("%s: want the candidates from events_order_attention_idx and %d range reads of the unfinished part of events_order_idx, got:\n%s", q.sql, q.reads, plan)
		}
	}
	// The out-of-order count the metrics read (status.ReadOrderCounts) uses
	// the same index: its predicate holds late arrivals too.
	execSQL(t, pool, `UPDATE webhooks.events SET out_of_order = true WHERE provider = 'stripe' AND order_key = 'cus_9'`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events AS e WHERE e.out_of_order`); n != 5 {
		t.Fatalf("%d events out of order, want 5", n)
	}
	q := `EXPLAIN SELECT e.provider, count(*) FROM webhooks.events AS e WHERE e.out_of_order GROUP BY e.provider`
	if plan := explainLines(t, c, q); strings.Contains(plan, "Seq Scan on events") || !strings.Contains(plan, "events_order_attention_idx") {
		t.Errorf("%s: want events_order_attention_idx, got:\n%s", q, plan)
	}
}

// scanOfEvents finds each read of webhooks.events in a plan.
var scanOfEvents = regexp.MustCompile(`((?:Bitmap Heap |Seq |Index Only |Index )Scan(?: using \w+)?) on events\b`)

// TestOrderingLateProbePlan: the late-arrival probes read the sequence's
// high-water mark through webhooks.order_marks' primary key, under the plan
// a session keeps, the generic one, with the statistics of a table analyzed
// before any event was processed (and order_marks empty) — both the one in
// _mark_processed()'s UPDATE (the row lock as the lease) and the trigger
// events_order_late's (complete(), every other path); marking an ordered
// event processed no longer reads webhooks.events for it (the probe used to
// be a read of the sequence's processed events, and a generic plan once
// read every processed event of the provider per probe). The settle's
// probe (_order_settle_many, one per sequence a batch touched) reads
// events_order_idx in its own order.
func TestOrderingLateProbePlan(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	storeSequences(t, pool, "stripe", 200, 25)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`,
		`SET plan_cache_mode = force_generic_plan`)
	pick := func(t *testing.T, what, marker string, plans []string) []string {
		t.Helper()
		var probes []string
		for _, plan := range plans {
			if strings.Contains(plan, marker) {
				probes = append(probes, plan)
			}
		}
		if len(probes) == 0 {
			t.Fatalf("auto_explain logged no plan of %s:\n%s", what, strings.Join(plans, "\n"))
		}
		return probes
	}
	readsMark := func(t *testing.T, what, marker string, plans []string) {
		t.Helper()
		for _, plan := range pick(t, what, marker, plans) {
			if !strings.Contains(plan, "Index Scan using order_marks_pkey on order_marks m") ||
				strings.Contains(plan, "Seq Scan on order_marks") {
				t.Fatalf("%s does not read order_marks by its primary key:\n%s", what, plan)
			}
		}
	}

	// The row lock as the lease: the probe is part of the UPDATE, and the
	// same statement moves the marks.
	if _, err := c.Exec(ctx, `SELECT count(*) FROM webhooks.process_pending('app.ordered(webhooks.events)'::regprocedure, 'w', 10)`); err != nil {
		t.Fatal(err)
	}
	all := notes()
	readsMark(t, "_mark_processed's late-arrival probe", "FROM webhooks.order_marks AS m", all)
	for _, plan := range pick(t, "_mark_processed's UPDATE", "), marks AS (", all) {
		for _, m := range scanOfEvents.FindAllStringSubmatch(plan, -1) {
			if m[1] != "Index Scan using events_pkey" {
				t.Fatalf("_mark_processed's UPDATE reads webhooks.events beyond the events it marks (%s):\n%s", m[1], plan)
			}
		}
	}
	// The settle at the batch's end: one probe per sequence, read in
	// events_order_idx's own order (no sort of the sequence's events).
	for _, plan := range pick(t, "_order_settle_many's probe", "AS f ON true", all) {
		if !strings.Contains(plan, "events_order_idx") || strings.Contains(plan, "Sort Key: e.") {
			t.Fatalf("_order_settle_many's probe does not read events_order_idx in its order:\n%s", plan)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`); n == 0 {
		t.Fatal("process_pending processed nothing")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_marks`); n == 0 {
		t.Fatal("process_pending moved no mark")
	}

	// The two-phase lease: the trigger's probe.
	seen := len(notes())
	var id int64
	var attempt int32
	if err := c.QueryRow(ctx, `SELECT id, attempts FROM webhooks.claim('w', 1)`).Scan(&id, &attempt); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := c.QueryRow(ctx, `SELECT webhooks.complete($1, 'w', $2)`, id, attempt).Scan(&ok); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	readsMark(t, "events_order_late's probe", "out_of_order := EXISTS", notes()[seen:])
}

// TestLockRunKeepsItsPlans: process_batch() (the two-phase lease) calls
// _lock_run() once per ordered head it ran, so _lock_run()'s statements
// must keep their generic plans. Left to choose, PostgreSQL planned its last
// statement (the locked rows, read back through unnest(v_ids)) again on
// every call, because the custom plan knows the run's length: about 0.1 ms
// a head, a fifth of the two-phase lease's time on 10,000 sequences of 5.
// auto_explain (verbose) prints a generic plan's parameters as $n and a
// custom plan's as the values it was made for.
func TestLockRunKeepsItsPlans(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	storeSequences(t, pool, "stripe", 20, 5)
	// A table of some size, so that the plan it keeps is the one a real
	// table gets: through the primary key.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, attempts)
		SELECT 'other', 'o' || i, 't', '{}', 'processed', now(), 1 FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_verbose = on`, `SET client_min_messages = log`)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var locked int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks.events AS h, webhooks._lock_run(h.id, 'w', 10) AS r
		WHERE h.provider = 'stripe' AND NOT h.order_held`).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked != 20*4 {
		t.Fatalf("_lock_run locked %d events behind 20 heads, want 80", locked)
	}
	var plans []string
	for _, n := range notes() {
		// The last statement, not the run statement (whose heads are
		// arrays too).
		if strings.Contains(n, "Function Call: unnest(") && strings.Contains(n, "WITH ORDINALITY AS x(id, n)") {
			plans = append(plans, n)
		}
	}
	if len(plans) != 20 {
		t.Fatalf("auto_explain logged %d plans of _lock_run's last statement for 20 calls, want 20:\n%s", len(plans), strings.Join(notes(), "\n"))
	}
	for i, plan := range plans {
		if !strings.Contains(plan, "Function Call: unnest($") || !strings.Contains(plan, "events_pkey") {
			t.Fatalf("call %d planned _lock_run's last statement for its values, or off the primary key:\n%s", i+1, plan)
		}
	}
}

// storeSequences makes provider ordered (setupOrdered) and stores keys
// sequences of perKey pending events each, last first, as ingest would
// have: the first of each sequence its head, the others held behind it.
func storeSequences(t *testing.T, pool *pgxpool.Pool, provider string, keys, perKey int) {
	t.Helper()
	setupOrdered(t, pool, provider)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num, order_held)
		SELECT $1, 'evt_' || k || '_' || n, 't',
		       jsonb_build_object('seq', n, 'data', jsonb_build_object('object', jsonb_build_object('customer', 'cus_' || k))),
		       'cus_' || k, n, n > 1
		FROM generate_series($3::int, 1, -1) AS n, generate_series(1, $2::int) AS k`, provider, keys, perKey)
}
