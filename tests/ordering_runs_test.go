package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// runRow is one row of webhooks.process_pending().
type runRow struct {
	ExternalID string
	Outcome    string
}

// processRun runs one webhooks.process_pending() call with app.ordered
// and returns its rows in the order returned.
func processRun(t *testing.T, pool *pgxpool.Pool, maxEvents int) []runRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT e.external_id, p.outcome
		FROM webhooks.process_pending('app.ordered(webhooks.events)'::regprocedure, 'w', $1) WITH ORDINALITY AS p
		JOIN webhooks.events AS e ON e.id = p.event_id
		ORDER BY p.ordinality`, maxEvents)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[runRow])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

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
		check func(t *testing.T, pool *pgxpool.Pool, first []runRow, calls int)
	}{
		{
			name: "whole sequences in one batch", maxEvents: 100,
			check: func(t *testing.T, pool *pgxpool.Pool, first []runRow, calls int) {
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
			check: func(t *testing.T, pool *pgxpool.Pool, first []runRow, calls int) {
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
			check: func(t *testing.T, pool *pgxpool.Pool, first []runRow, calls int) {
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
			first := processRun(t, pool, tc.maxEvents)
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
				if len(processRun(t, pool, tc.maxEvents)) == 0 {
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
