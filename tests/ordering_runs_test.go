package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// runsOf is the external ids app.ordered ran, in the order it ran them.
func runsOf(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT external_id FROM app.runs ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, " ")
}

// assertPrefixes fails unless, for every sequence, the processed events are
// the first ones of it in order (the rest still open).
func assertPrefixes(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events AS p
		JOIN webhooks.events AS o ON o.provider = p.provider AND o.order_key = p.order_key
		WHERE p.status = 'processed' AND o.status <> 'processed' AND o.order_num < p.order_num`); n != 0 {
		t.Fatalf("%d processed events have an earlier event of their sequence still open", n)
	}
}

// TestOrderingProcessPendingRuns: process_pending() (the row lock as the
// lease) takes, behind the head of a sequence, the events waiting behind it
// and runs them in order in the same batch, up to max_events in all; a
// failure stops its own sequence's run (the events behind it are neither
// run nor returned, and stay held) and no other; nothing run in order in
// one batch is marked out_of_order.
func TestOrderingProcessPendingRuns(t *testing.T) {
	t.Parallel()
	a := []orderedEvent{{"a", 1, "a1"}, {"a", 2, "a2"}, {"a", 3, "a3"}, {"a", 4, "a4"}, {"a", 5, "a5"}}
	b := []orderedEvent{{"b", 1, "b1"}, {"b", 2, "b2"}, {"b", 3, "b3"}}
	// Stored out of order, later ones first.
	stored := []orderedEvent{a[4], b[2], a[2], b[0], a[0], a[3], b[1], a[1]}
	for _, tc := range []struct {
		name      string
		maxEvents int
		failing   string
		// calls until nothing is left, with failing cleared after the first
		check func(t *testing.T, pool *pgxpool.Pool, first []pendingRow, calls int)
	}{
		{
			name: "whole sequences in one batch", maxEvents: 100,
			check: func(t *testing.T, pool *pgxpool.Pool, first []pendingRow, calls int) {
				if len(first) != 8 {
					t.Fatalf("the first batch ran %d events, want all 8: %v", len(first), first)
				}
				if calls != 1 {
					t.Errorf("%d batches, want 1", calls)
				}
			},
		},
		{
			name: "max_events bounds a run", maxEvents: 3,
			check: func(t *testing.T, pool *pgxpool.Pool, first []pendingRow, calls int) {
				if len(first) != 3 {
					t.Fatalf("the first batch ran %d events, want 3: %v", len(first), first)
				}
				// The first head's sequence fills the batch: a head and two behind it.
				k := first[0].ExternalID[:1]
				if first[1].ExternalID != k+"2" || first[2].ExternalID != k+"3" {
					t.Errorf("first batch %v, want %s1 %s2 %s3", first, k, k, k)
				}
				if calls < 3 {
					t.Errorf("%d batches of at most 3 for 8 events", calls)
				}
			},
		},
		{
			name: "a failure stops its own run", maxEvents: 100, failing: "a3",
			check: func(t *testing.T, pool *pgxpool.Pool, first []pendingRow, calls int) {
				var got []string
				for _, r := range first {
					got = append(got, r.ExternalID+":"+r.Outcome)
				}
				// b's run and a's up to the failure; a4 and a5 not run, not returned.
				want := map[string]bool{"a1:processed": true, "a2:processed": true, "a3:pending": true,
					"b1:processed": true, "b2:processed": true, "b3:processed": true}
				if len(got) != len(want) {
					t.Fatalf("first batch %v, want %d rows", got, len(want))
				}
				for _, g := range got {
					if !want[g] {
						t.Fatalf("first batch %v: %s unexpected", got, g)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 2)
			setupOrdered(t, pool, "stripe")
			for _, e := range stored {
				ingest(t, pool, "stripe", e.id, "customer.updated", e.payload(""))
			}
			if tc.failing != "" {
				execSQL(t, pool, `INSERT INTO app.failing VALUES ($1)`, tc.failing)
			}
			first := processPending(t, pool, orderedHandler, "w", tc.maxEvents)
			assertPrefixes(t, pool)
			if tc.failing != "" {
				// The run stopped at the failure: what was behind it waits, held,
				// its attempts not counted.
				if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events
					WHERE external_id IN ('a4', 'a5') AND status = 'pending' AND order_held AND attempts = 0`); n != 2 {
					t.Fatalf("%d of a4, a5 are pending, held and unattempted after a3 failed, want 2", n)
				}
				if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE external_id IN ('a4', 'a5')`); n != 0 {
					t.Fatalf("%d of a4, a5 ran after a3 failed", n)
				}
				execSQL(t, pool, `DELETE FROM app.failing`)
				execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE status = 'pending'`)
			}
			calls := 1
			for ; calls < 20; calls++ {
				if len(processPending(t, pool, orderedHandler, "w", tc.maxEvents)) == 0 {
					break
				}
				assertPrefixes(t, pool)
			}
			tc.check(t, pool, first, calls)
			auditOrder(t, pool, "stripe", 8, true)
			// Each sequence ran in order.
			for _, k := range []string{"a", "b"} {
				var seq []string
				for _, id := range strings.Fields(runsOf(t, pool)) {
					if strings.HasPrefix(id, k) {
						seq = append(seq, id)
					}
				}
				var want []string
				for i := 1; i <= map[string]int{"a": 5, "b": 3}[k]; i++ {
					want = append(want, fmt.Sprintf("%s%d", k, i))
				}
				if strings.Join(seq, " ") != strings.Join(want, " ") {
					t.Errorf("sequence %s ran %v, want %v", k, seq, want)
				}
			}
		})
	}
}

// batchRun claims what is runnable and runs it with one process_batch()
// call; it returns its rows in order, with their external ids (Attempt
// unset: process_batch() returns none).
func batchRun(t *testing.T, pool *pgxpool.Pool) []pendingRow {
	t.Helper()
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE status = 'pending'`)
	got := claim(t, pool, "w", 100, "5 minutes")
	if len(got) == 0 {
		return nil
	}
	ids, atts := fences(got)
	rows, err := pool.Query(context.Background(), `SELECT b.event_id, e.external_id, b.outcome, b.error
		FROM webhooks.process_batch('app.ordered(webhooks.events)'::regprocedure, 'w', $1, $2) WITH ORDINALITY AS b
		JOIN webhooks.events AS e ON e.id = b.event_id
		ORDER BY b.ordinality`, ids, atts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[pendingRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOrderingProcessBatchRuns: process_batch() (the two-phase lease) runs,
// behind each claimed event of an ordered sequence it processed, the events
// waiting behind it, in order, up to as many as the batch has, under the
// row lock; a failure stops that run only, and the failed event is the
// sequence's head from then on (not held): retried in place, or, dead,
// passed over with dead_blocks = false.
func TestOrderingProcessBatchRuns(t *testing.T) {
	t.Parallel()
	stored := []orderedEvent{{"a", 5, "a5"}, {"b", 3, "b3"}, {"a", 3, "a3"}, {"b", 1, "b1"}, {"a", 1, "a1"},
		{"a", 4, "a4"}, {"b", 2, "b2"}, {"a", 2, "a2"}}
	for _, tc := range []struct {
		name       string
		failing    string
		dead       bool // failing has one attempt only; dead_blocks = false
		processed  int64
		firstBatch int
	}{
		{name: "runs behind the claimed heads", processed: 8, firstBatch: 4},
		// b1 is claimed first: b2 fails behind it, b3 is not run, and a1
		// takes the room left (a2).
		{name: "a failure stops its run", failing: "b2", processed: 8, firstBatch: 4},
		{name: "a dead event behind a head is passed over", failing: "b2", dead: true, processed: 7, firstBatch: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 2)
			execSQL(t, pool, orderedHandlerSQL)
			execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.seq', $1)`, !tc.dead)
			for _, e := range stored {
				ingest(t, pool, "stripe", e.id, "customer.updated", e.payload(""))
			}
			if tc.failing != "" {
				execSQL(t, pool, `INSERT INTO app.failing VALUES ($1)`, tc.failing)
			}
			if tc.dead {
				execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE external_id = $1`, tc.failing)
			}
			// Two heads claimed (b1, then a1): room for two more behind them.
			first := batchRun(t, pool)
			if len(first) != tc.firstBatch {
				t.Fatalf("the first batch has %d rows %v, want %d", len(first), first, tc.firstBatch)
			}
			assertPrefixes(t, pool)
			if tc.failing != "" {
				want := "pending"
				if tc.dead {
					want = "dead"
				}
				if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events
					WHERE external_id = $1 AND status = $2 AND NOT order_held AND attempts = 1`, tc.failing, want); n != 1 {
					t.Fatalf("%s is not %s, unheld, with one attempt after failing behind b1", tc.failing, want)
				}
				if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE external_id = 'b3'`); n != 0 {
					t.Fatalf("b3 ran behind the failed %s", tc.failing)
				}
				if !tc.dead {
					execSQL(t, pool, `DELETE FROM app.failing`)
				}
			}
			for i := 0; i < 20 && len(batchRun(t, pool)) > 0; i++ {
				assertPrefixesUnlessDead(t, pool, tc.dead)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`); n != tc.processed {
				t.Fatalf("%d processed, want %d", n, tc.processed)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT event_id FROM app.runs GROUP BY 1 HAVING count(*) > 1) AS d`); n != 0 {
				t.Errorf("%d events ran more than once", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE cardinality(early_open) > 0`); n != 0 && !tc.dead {
				t.Errorf("%d runs started while an earlier event of their sequence was open", n)
			}
			for _, k := range []string{"a", "b"} {
				var seq []string
				for _, id := range strings.Fields(runsOf(t, pool)) {
					if strings.HasPrefix(id, k) {
						seq = append(seq, id)
					}
				}
				if !sortedRuns(seq) {
					t.Errorf("sequence %s ran %v, out of order", k, seq)
				}
			}
		})
	}
}

// assertPrefixesUnlessDead is assertPrefixes, with dead events passed over
// when dead is set (dead_blocks = false).
func assertPrefixesUnlessDead(t *testing.T, pool *pgxpool.Pool, dead bool) {
	t.Helper()
	if !dead {
		assertPrefixes(t, pool)
		return
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events AS p
		JOIN webhooks.events AS o ON o.provider = p.provider AND o.order_key = p.order_key
		WHERE p.status = 'processed' AND o.status NOT IN ('processed', 'dead') AND o.order_num < p.order_num`); n != 0 {
		t.Fatalf("%d processed events have an earlier event of their sequence still open", n)
	}
}

// sortedRuns reports whether the external ids of one sequence ("a1", "a2",
// ...) ran in ascending order.
func sortedRuns(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] < ids[i-1] {
			return false
		}
	}
	return true
}
