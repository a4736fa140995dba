package tests

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/console"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestFencedUpdatesUsePrimaryKey: the fenced updates look the event up by
// its id even when the statistics were taken with nothing in flight. Written
// with "status = 'processing'", their UPDATE proves the predicate of the
// partial index events_leases_idx, which the planner then costs as empty and
// scans — every lease in flight, on every completion (bench/REPORT.md,
// section 3). The plans are those of the functions' own statements, as
// auto_explain logs them (nested statements included).
func TestFencedUpdatesUsePrimaryKey(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	// 3,000 events, analysed while all are pending, then 2,000 in flight.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'p', 'e' || i, 't', '{}' FROM generate_series(1, 3000) AS i`)
	execSQL(t, pool, `ANALYZE webhooks.inbox`)
	leases := claim(t, pool, "w", 2000, "5 minutes")

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`)
	// The hazard is real: the same fence written with "=" picks the index.
	naive := explainLines(t, c, `EXPLAIN UPDATE webhooks.inbox AS e SET updated_at = now()
		WHERE e.id = $1 AND e.status = 'processing' AND e.locked_by = 'w' AND e.attempts = 1`, leases[0].ID)
	// (events_status_received_idx and events_status_provider_received_idx,
	// the console's list indexes, are the same trap.)
	if !strings.Contains(naive, "events_leases_idx") && !strings.Contains(naive, "events_status_received_idx") &&
		!strings.Contains(naive, "events_status_provider_received_idx") {
		t.Fatalf("the setup does not reproduce the hazard; the naive fence plans:\n%s", naive)
	}

	l := leases[0]
	calls := []struct {
		name, sql string
		args      []any
	}{
		{"heartbeat", `SELECT webhooks.heartbeat($1, 'w', $2, '1 minute')`, []any{l.ID, l.Attempts}},
		{"leased_events", `SELECT count(*) FROM webhooks.leased_events('w', ARRAY[$1::bigint], ARRAY[$2::int])`, []any{l.ID, l.Attempts}},
		{"complete", `SELECT webhooks.complete($1, 'w', $2)`, []any{l.ID, l.Attempts}},
		{"fail", `SELECT webhooks.fail($1, 'w', $2, 'boom')`, []any{leases[1].ID, leases[1].Attempts}},
		{"release", `SELECT webhooks.release($1, 'w', $2)`, []any{leases[2].ID, leases[2].Attempts}},
	}
	for _, call := range calls {
		seen := len(notes())
		if _, err := c.Exec(ctx, call.sql, call.args...); err != nil {
			t.Fatalf("%s: %v", call.name, err)
		}
		got := strings.Join(notes()[seen:], "\n")
		if !strings.Contains(got, "webhooks.inbox") {
			t.Fatalf("%s: auto_explain logged no plan touching webhooks.inbox:\n%s", call.name, got)
		}
		if strings.Contains(got, "events_leases_idx") || strings.Contains(got, "events_status_received_idx") ||
			strings.Contains(got, "events_status_provider_received_idx") || !strings.Contains(got, "events_pkey") {
			t.Errorf("%s: want a primary-key lookup, got:\n%s", call.name, got)
		}
	}
}

// TestSequenceGapsWithoutJIT: find_sequence_gaps() runs with jit off. Its
// query's estimate (1,000 rows per hole from generate_series) makes every
// window look expensive, and JIT compilation cost a third of a 1,000,000-id
// window's time (bench/REPORT.md, section 5). The session here asks for JIT
// at any cost; the function's own SET must win.
func TestSequenceGapsWithoutJIT(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'seq', i::text, 't', '{}' FROM generate_series(1, 2000) AS i WHERE i % 10 <> 0`)
	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `SET jit = on`, `SET jit_above_cost = 0`, `SET jit_inline_above_cost = 0`, `SET jit_optimize_above_cost = 0`)
	// Control: the same query outside the function is JIT-compiled here.
	control := explainLines(t, c, `EXPLAIN (ANALYZE) SELECT count(*) FROM webhooks._sequence_gaps('seq', 1, 2000)`)
	if !strings.Contains(control, "JIT:") {
		t.Skip("this server does not JIT-compile (built without LLVM); nothing to check")
	}
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var n int64
	if err := c.QueryRow(ctx, `SELECT count(*) FROM webhooks.find_sequence_gaps('seq', 1, 2000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 200 {
		t.Fatalf("gaps %d, want 200", n)
	}
	// The function's own query; the caller's statement around it is the
	// caller's business (and is compiled here, jit_above_cost being 0).
	plans := notes()
	var inner string
	for _, plan := range plans {
		if strings.Contains(plan, "FROM webhooks._sequence_gaps(") {
			inner = plan
		}
	}
	if inner == "" {
		t.Fatalf("auto_explain logged no plan of the gap query:\n%s", strings.Join(plans, "\n"))
	}
	if strings.Contains(inner, "JIT:") {
		t.Fatalf("find_sequence_gaps' query was JIT-compiled:\n%s", inner)
	}
}

// explainLines runs an EXPLAIN statement on c and returns its plan as text.
func explainLines(t *testing.T, c *pgx.Conn, explain string, args ...any) string {
	t.Helper()
	rows, err := c.Query(context.Background(), explain, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestConsoleSourceFilterUsesPartialIndex: a console filter on a source other
// than webhook (backfill) walks the partial indexes of non-webhook rows, in
// the page and in the per-status counts, even with a generic plan (where
// "source = $1" alone proves nothing about the indexes' predicate): the
// queue's (status, received_at, id) and each day slice's (source,
// received_at, id) of history. The status index, or history's (received_at,
// id), instead would be read to its end for a rare source.
func TestConsoleSourceFilterUsesPartialIndex(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, source, status, processed_at)
		SELECT 'p', 'e' || i, 't', '{}', CASE WHEN i % 100 = 0 THEN 'backfill' ELSE 'webhook' END,
		       CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'processed' END, CASE WHEN i % 10 <> 0 THEN now() END
		FROM generate_series(1, 20000) AS i`)
	pgtest.SeedHistoryDays(t, pool, 10, 2000)
	execSQL(t, pool, `ANALYZE webhooks.inbox`)
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format("20060102")
	qs, err := console.ListSQL(url.Values{"source": {"backfill"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		if len(q.Args) != 1 || q.Args[0] != "backfill" {
			t.Fatalf("%s: want the one argument 'backfill', got %v", q.Name, q.Args)
		}
		name := fmt.Sprintf("console_%d", i)
		if _, err := c.Exec(ctx, "PREPARE "+name+"(text) AS "+q.SQL); err != nil {
			t.Fatalf("%s: %v\n%s", q.Name, err, q.SQL)
		}
		plan := explainLines(t, c.Conn(), "EXPLAIN EXECUTE "+name+"('backfill')")
		// A sequential scan is fine only of a slice created ahead for a day
		// to come: it is empty.
		seqOfRows := false
		for _, m := range seqScanLine.FindAllStringSubmatch(plan, -1) {
			day, ok := strings.CutPrefix(m[1], "history_")
			seqOfRows = seqOfRows || !ok || day <= today
		}
		if !strings.Contains(plan, "events_other_source_status_received_idx") || !sourceSliceIndex.MatchString(plan) ||
			strings.Contains(plan, "events_status_received_idx") || otherSliceIndex.MatchString(plan) || seqOfRows {
			t.Errorf("%s: want every status read from the partial indexes of non-webhook rows, got:\n%s", q.Name, plan)
		}
	}
}

// The scans of TestConsoleSourceFilterUsesPartialIndex's plans: a day
// slice's partial index of non-webhook rows, its other indexes, and a
// sequential scan's relation.
var (
	sourceSliceIndex = regexp.MustCompile(`history_\d{8}_source_received_at_id_idx`)
	otherSliceIndex  = regexp.MustCompile(`history_\d{8}_(received_at_id|provider_received_at_id|id)_idx`)
	seqScanLine      = regexp.MustCompile(`Seq Scan on (\S+)`)
)

// TestIngestLooksUpByTheUniqueKey: ingest_webhook()'s look-up of a key, and
// of a body digest, reads the unique index of webhooks.keys — on a new install, whose table
// has never been analysed (and stays so through a bulk load in one
// transaction), as on a table analysed with thousands of rows, and once the
// plan is generic. With a second index on "provider = p" beside the unique
// key, the planner's tie on the never-analysed table went to that index,
// which reads every row of the provider and filters on external_id: each
// delivery then cost more than the one before it.
func TestIngestLooksUpByTheUniqueKey(t *testing.T) {
	t.Parallel()
	for _, analyzed := range []bool{false, true} {
		t.Run(fmt.Sprintf("analyzed=%t", analyzed), func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			if analyzed {
				execSQL(t, PoolFor(t, conf.URL(), 1), `
					SELECT count(*) FROM generate_series(1, 3000) AS g, webhooks.ingest_webhook('p', 'seed' || g, 't', '{}');
					ANALYZE webhooks.keys, webhooks.inbox`)
			}
			c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
				`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`)
			ctx := context.Background()
			// Eight calls of each kind: past the five custom plans, so the
			// generic plan is in the log too.
			for i := 0; i < 8; i++ {
				if _, err := c.Exec(ctx, `SELECT webhooks.ingest_webhook('p', $1, 't', '{}')`, fmt.Sprintf("k%d", i)); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Exec(ctx, `SELECT webhooks.ingest_webhook('p', $1, 't', '{}', body_sha256 => sha256($2::bytea))`,
					fmt.Sprintf("d%d", i), fmt.Sprintf("body %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			var lookups int
			for _, plan := range notes() {
				if !strings.Contains(plan, "FROM webhooks.keys AS k") || !strings.Contains(plan, "WHERE k.provider = ingest_webhook.provider") {
					continue
				}
				lookups++
				byDigest := strings.Contains(plan, "k.body_sha256 = ingest_webhook.body_sha256")
				want := "keys_pkey"
				if byDigest {
					want = "keys_provider_body_sha256_key"
				}
				if !strings.Contains(plan, "Index Scan using "+want) && !strings.Contains(plan, "Index Only Scan using "+want) {
					t.Errorf("a look-up not on %s:\n%s", want, plan)
				}
			}
			if lookups < 24 {
				t.Fatalf("auto_explain logged %d look-ups of ingest_webhook(), want at least 24:\n%s", lookups, strings.Join(notes(), "\n"))
			}
		})
	}
}
