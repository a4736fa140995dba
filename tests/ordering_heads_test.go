package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestOrderingProcessPendingHeads: process_pending() finds the runs behind
// several heads with one statement (_lock_sequences()). In what one batch
// returns, each head is followed by its own run, in order, and nothing of
// another sequence comes between; max_events cuts the last run, never a
// sequence's order; a follower another transaction holds locked ends its
// own head's run and no other.
func TestOrderingProcessPendingHeads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		keys, perKey, maxEvents int
		lock                    string // held FOR UPDATE by another transaction while the first batch is taken
		want                    int    // events in the first batch
	}{
		{name: "short runs, one batch", keys: 30, perKey: 3, maxEvents: 100, want: 90},
		// The first head and its 4, then two heads (4 set aside for each):
		// the second's whole run, the third's first event behind it.
		{name: "max_events cuts the last run", keys: 10, perKey: 5, maxEvents: 12, want: 12},
		{name: "a locked follower ends its own run", keys: 10, perKey: 5, maxEvents: 100, lock: "evt_003_003", want: 47},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := NewPool(t, 3)
			setupOrdered(t, pool, "stripe")
			for _, e := range orderedEvents(tc.keys, tc.perKey, 0) {
				ingest(t, pool, "stripe", e.id, "customer.updated", e.payload(""))
			}
			release := func() {}
			if tc.lock != "" {
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, `SELECT 1 FROM webhooks.inbox WHERE external_id = $1 FOR UPDATE`, tc.lock); err != nil {
					t.Fatal(err)
				}
				release = func() { _ = tx.Rollback(ctx) }
				defer release()
			}
			var first []pendingRow
			if tc.lock == "" {
				first = processPending(t, pool, orderedHandler, "w", tc.maxEvents)
			} else {
				first = processRunPastLock(t, pool, tc.maxEvents, release)
			}
			if len(first) != tc.want {
				t.Fatalf("the first batch has %d events, want %d: %v", len(first), tc.want, first)
			}
			// evt_KKK_NNN: each sequence once, as one stretch from its first
			// event on.
			seen := map[string]bool{}
			key, next := "", 0
			for _, r := range first {
				if r.Outcome != "processed" {
					t.Fatalf("%s: %s", r.ExternalID, r.Outcome)
				}
				k, n := r.ExternalID[4:7], r.ExternalID[8:]
				if k != key {
					if seen[k] {
						t.Fatalf("sequence %s comes back after another in %v", k, first)
					}
					seen[k], key, next = true, k, 1
				}
				if n != fmt.Sprintf("%03d", next) {
					t.Fatalf("%s where the batch should have event %d of its sequence: %v", r.ExternalID, next, first)
				}
				next++
				if tc.lock != "" && r.ExternalID >= tc.lock && k == tc.lock[4:7] {
					t.Fatalf("%s was locked elsewhere or is behind it, yet ran: %v", r.ExternalID, first)
				}
			}
			assertPrefixes(t, pool)
			if tc.lock != "" {
				// Only its own sequence waited for the locked event.
				if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`); n != 3 {
					t.Fatalf("%d events left after the first batch, want the locked one and the two behind it", n)
				}
			}
			for calls := 0; calls < 50 && len(processPending(t, pool, orderedHandler, "w", tc.maxEvents)) > 0; calls++ {
				assertPrefixes(t, pool)
			}
			auditOrder(t, pool, "stripe", int64(tc.keys*tc.perKey), true)
		})
	}
}

// processRunPastLock is processRun while another transaction holds a row
// lock that the batch runs into: the batch steps over the locked event
// (SKIP LOCKED), and its settle, which then wants that event (the next of
// its sequence), waits for the lock. Once it waits, release ends the other
// transaction and the batch commits.
func processRunPastLock(t *testing.T, pool *pgxpool.Pool, maxEvents int, release func()) []pendingRow {
	t.Helper()
	type result struct {
		rows []pendingRow
		err  error
	}
	done := make(chan result, 1)
	go func() {
		got, err := runPending(context.Background(), pool, orderedHandler, "w", maxEvents)
		done <- result{got, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%process_pending%'`) == 0 {
		select {
		case r := <-done:
			t.Fatalf("the batch ended without waiting for the locked event's settle (%v, %v)", r.rows, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch neither ended nor waited for the lock in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.rows
}
