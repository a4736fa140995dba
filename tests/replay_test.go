package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestReplay: dead and processed events run again, audited; processing,
// unknown and pruned events and a blank reason are refused.
func TestReplay(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()

	deadID, _ := ingest(t, pool, "p", "dead", "t", `{}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, deadID)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 1, 'boom')`, deadID)

	doneID, _ := ingest(t, pool, "p", "done", "t", `{}`)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', 1)`, doneID)

	for _, tc := range []struct {
		name   string
		id     int64
		before string
	}{
		{name: "dead", id: deadID, before: "dead"},
		{name: "processed", id: doneID, before: "processed"},
	} {
		execSQL(t, pool, `SELECT webhooks.replay($1::bigint, $2)`, tc.id, "operator: fixed the handler ("+tc.name+")")
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'pending'
			AND attempts = 0 AND processed_at IS NULL AND last_error IS NULL AND run_after <= now()`, tc.id); n != 1 {
			t.Fatalf("%s: not back to pending", tc.name)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE event_id = $1
			AND previous_status = $2 AND previous_attempts = 1 AND reason LIKE 'operator:%' AND replayed_by <> ''`, tc.id, tc.before); n != 1 {
			t.Fatalf("%s: replay not audited", tc.name)
		}
	}
	// Both run again.
	c := claim(t, pool, "w2", 10, "1 minute")
	if len(c) != 2 {
		t.Fatalf("replayed events claimed: %v", c)
	}

	prunedID, _ := ingest(t, pool, "p", "pruned", "t", `{}`)
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now(), payload = NULL, payload_pruned_at = now() WHERE id = $1`, prunedID)

	refusals := []struct {
		name, reason, code, msg string
		id                      int64
	}{
		{name: "processing", id: c[0].ID, reason: "again", code: "55006", msg: "is being processed"},
		{name: "unknown id", id: 999999, reason: "again", code: "P0002", msg: "no event with id 999999"},
		{name: "pruned payload", id: prunedID, reason: "again", code: "55000", msg: "payload was pruned"},
		{name: "blank reason", id: deadID, reason: "  ", code: "22023", msg: "reason must not be empty"},
	}
	for _, r := range refusals {
		_, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint, $2)`, r.id, r.reason)
		wantPgError(t, err, r.code, r.msg)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays`); n != 2 {
		t.Fatalf("refused replays were audited: %d rows", n)
	}
}

// TestReplayDoesNotWaitForABatch: an event a worker's batch holds by its row
// lock (the row lock as the lease: still pending, locked until the batch
// commits) is "being processed": a single replay raises object_in_use
// (55006) and a bulk replay skips it, each within the 3 s lock_timeout,
// instead of waiting for the batch to end.
func TestReplayDoesNotWaitForABatch(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	doneID, _ := ingest(t, pool, "p", "done", "t", `{}`)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', 1)`, doneID)
	heldID, _ := ingest(t, pool, "p", "held", "t", `{}`)

	// A worker's open row-lock batch holds the pending event.
	batch, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Rollback(ctx) //nolint:errcheck // the batch never commits
	var locked int64
	if err := batch.QueryRow(ctx, `SELECT count(*) FROM webhooks._lock_pending('w', 10)`).Scan(&locked); err != nil || locked != 1 {
		t.Fatalf("the batch locked %d events (%v), want 1", locked, err)
	}

	wait, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err = pool.Exec(wait, `SELECT webhooks.replay($1::bigint, 'operator')`, heldID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55006" || !strings.Contains(pgErr.Message, "running batch") {
		t.Fatalf("single replay of an event in a running batch: %v after %s, want SQLSTATE 55006 (being processed)", err, time.Since(start))
	}
	if took := time.Since(start); took > 10*time.Second || took < 2*time.Second {
		t.Fatalf("single replay took %s, want about the 3 s lock_timeout", took)
	}

	start = time.Now()
	var n int
	if err := pool.QueryRow(wait, `SELECT webhooks.replay($1::bigint[], 'operator')`, []int64{heldID, doneID}).Scan(&n); err != nil {
		t.Fatalf("bulk replay with an event in a running batch: %v after %s", err, time.Since(start))
	}
	if n != 1 {
		t.Fatalf("bulk replay put back %d events, want 1 (the held one skipped)", n)
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE event_id = $1`, heldID); got != 0 {
		t.Fatal("the held event was audited as replayed")
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'pending' AND attempts = 0`, doneID); got != 1 {
		t.Fatal("the processed event was not put back")
	}
	// The first attempt, which waited on the held row, was rolled back whole:
	// one audit row for the replayed event, not two.
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE event_id = $1`, doneID); got != 1 {
		t.Fatalf("%d audit rows for the replayed event, want 1", got)
	}
}
