package tests

import (
	"context"
	"encoding/json"
	"testing"
)

// TestOrderingMarks: the late-arrival check reads the sequence's high-water
// mark (webhooks.order_marks), which every path that marks an ordered event
// processed moves forward and never back; events processed in one
// transaction do not count against each other, in whatever order they are
// written.
func TestOrderingMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// run processes the events named, as the test case's path does.
		steps func(t *testing.T, run func(sql string, args ...any))
		// late: the events marked out_of_order, in external id order.
		late string
		// mark: the external id the mark stands at at the end.
		mark string
	}{
		{
			// claim() and complete(): the trigger events_order_late.
			name: "complete() of a late arrival",
			steps: func(t *testing.T, run func(string, ...any)) {
				run(`SELECT webhooks.complete(c.id, 'w', c.attempts) FROM webhooks.claim('w', 10) AS c`)
				run(`INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num)
					VALUES ('stripe', 'c1', 't', '{}', 'cus_a', 1)`)
				run(`SELECT webhooks.complete(c.id, 'w', c.attempts) FROM webhooks.claim('w', 10) AS c`)
			},
			late: "c1", mark: "c2",
		},
		{
			// process_pending(): _mark_processed()'s own probe and write.
			name: "process_pending() of a late arrival",
			steps: func(t *testing.T, run func(string, ...any)) {
				run(`SELECT count(*) FROM webhooks.process_pending('app.ordered(webhooks.events)'::regprocedure, 'w', 10)`)
				run(`INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num)
					VALUES ('stripe', 'c1', 't', '{}', 'cus_a', 1)`)
				run(`SELECT count(*) FROM webhooks.process_pending('app.ordered(webhooks.events)'::regprocedure, 'w', 10)`)
			},
			late: "c1", mark: "c2",
		},
		{
			// One transaction writes c2 then c1: c1 is not late. A later
			// transaction's c0 is: the mark stands at c2.
			name: "one transaction, written out of order",
			steps: func(t *testing.T, run func(string, ...any)) {
				run(`INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num, order_held)
					VALUES ('stripe', 'c1', 't', '{}', 'cus_a', 1, true), ('stripe', 'c0', 't', '{}', 'cus_a', 0, true)`)
				run(`DO $$ BEGIN
					UPDATE webhooks.events SET status = 'processed', processed_at = now() WHERE external_id = 'c2';
					UPDATE webhooks.events SET status = 'processed', processed_at = now() WHERE external_id = 'c1';
					END $$`)
				run(`UPDATE webhooks.events SET status = 'processed', processed_at = now() WHERE external_id = 'c0'`)
			},
			late: "c0", mark: "c2",
		},
		{
			// A replayed event processed again does not move the mark back
			// (and is not late: nothing after it ran).
			name: "replay of the mark's own event",
			steps: func(t *testing.T, run func(string, ...any)) {
				run(`SELECT webhooks.complete(c.id, 'w', c.attempts) FROM webhooks.claim('w', 10) AS c`)
				run(`INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num, order_held)
					VALUES ('stripe', 'c1', 't', '{}', 'cus_a', 1, true)`)
				run(`UPDATE webhooks.events SET status = 'processed', processed_at = now() WHERE external_id = 'c1'`)
				run(`SELECT webhooks.replay(id, 'test') FROM webhooks.events WHERE external_id = 'c2'`)
				run(`SELECT webhooks.complete(c.id, 'w', c.attempts) FROM webhooks.claim('w', 10) AS c`)
			},
			late: "c1", mark: "c2",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 2)
			setupOrdered(t, pool, "stripe")
			execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num)
				VALUES ('stripe', 'c2', 't', '{}', 'cus_a', 2)`)
			tc.steps(t, func(sql string, args ...any) { t.Helper(); execSQL(t, pool, sql, args...) })
			var late, mark, processed string
			if err := pool.QueryRow(ctx, `SELECT
				    coalesce((SELECT string_agg(external_id, ' ' ORDER BY external_id) FROM webhooks.events WHERE out_of_order), ''),
				    coalesce((SELECT e.external_id FROM webhooks.order_marks AS m JOIN webhooks.events AS e ON e.id = m.event_id
				              WHERE m.provider = 'stripe' AND m.order_key = 'cus_a'), ''),
				    (SELECT string_agg(external_id || '=' || status, ' ' ORDER BY external_id) FROM webhooks.events)`).
				Scan(&late, &mark, &processed); err != nil {
				t.Fatal(err)
			}
			if late != tc.late || mark != tc.mark {
				t.Errorf("out_of_order %q, mark at %q; want %q, %q (events: %s)", late, mark, tc.late, tc.mark, processed)
			}
			// Every event ran.
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`); n != 0 {
				t.Errorf("%d events unfinished, want none (events: %s)", n, processed)
			}
		})
	}
}

// TestOrderingMarksPruned: prune() deletes the marks last moved before
// keep_keys (the events they stood for are gone with them) and counts them,
// on the call that finishes a run (not while "more" is true); a recent mark
// stays.
func TestOrderingMarksPruned(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	execSQL(t, pool, `INSERT INTO webhooks.order_marks (provider, order_key, order_num, received_at, event_id, marked_at)
		VALUES ('stripe', 'cus_old', 1, now() - interval '500 days', 1, now() - interval '500 days'),
		       ('stripe', 'cus_new', 1, now() - interval '1 day', 2, now() - interval '1 day')`)
	// Two processed events whose payloads are due: max_rows 1 leaves one.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
		SELECT 'other', 'o' || i, 't', '{}', 'processed', now() - interval '40 days', now() - interval '40 days'
		FROM generate_series(1, 2) AS i`)
	prune := func(sql string) map[string]any {
		t.Helper()
		var raw []byte
		if err := pool.QueryRow(context.Background(), sql).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := prune(`SELECT webhooks.prune('30 days', '400 days', max_rows => 1)`); got["more"] != true || got["order_marks_deleted"] != 0.0 {
		t.Errorf("prune with more to do: %v, want more true and order_marks_deleted 0", got)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_marks`); n != 2 {
		t.Errorf("%d marks left after a call with more to do, want 2", n)
	}
	if got := prune(`SELECT webhooks.prune('30 days', '400 days')`); got["more"] != false || got["order_marks_deleted"] != 1.0 {
		t.Errorf("prune: %v, want more false and order_marks_deleted 1", got)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_marks WHERE order_key = 'cus_new'`); n != 1 {
		t.Error("prune deleted a mark moved a day ago")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_marks`); n != 1 {
		t.Errorf("%d marks left, want 1", n)
	}
}
