package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestIngestDuplicateIsReadOnly: a duplicate delivery takes no transaction
// id (it writes nothing: no row version, no row lock, no WAL, no flush at
// commit), while created and updated deliveries do. Each delivery runs in a
// transaction of its own and asks pg_current_xact_id_if_assigned() at the
// end.
func TestIngestDuplicateIsReadOnly(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	ingest(t, pool, "p", "settled", "t", `{"v": 1}`)
	claimed := claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', $2)`, claimed[0].ID, claimed[0].Attempts)
	ingest(t, pool, "p", "pending", "t", `{"v": 1}`)

	cases := []struct {
		name, key, payload, outcome string
		writes                      bool
	}{
		{"new key", "fresh", `{"v": 1}`, "created", true},
		{"pending, same payload", "pending", `{"v": 1}`, "duplicate", false},
		{"processed, other payload", "settled", `{"v": 9}`, "duplicate", false},
		{"pending, other payload", "pending", `{"v": 2}`, "updated", true},
	}
	for _, c := range cases {
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var outcome string
		var xid *string
		err = tx.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('p', $1, 't', $2::jsonb)`, c.key, c.payload).Scan(&outcome)
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned()::text`).Scan(&xid)
		}
		_ = tx.Commit(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if outcome != c.outcome || (xid != nil) != c.writes {
			t.Errorf("%s: outcome %q, transaction id assigned %v; want %q, %v", c.name, outcome, xid != nil, c.outcome, c.writes)
		}
	}
}

// TestIngestDuplicateDoesNotWaitOnRowLock: a duplicate of an event whose row
// is locked right now (a worker claiming or completing it) answers at once;
// the upsert alone would queue behind the lock. lock_timeout turns a wait
// into an error, so the test needs no timing.
func TestIngestDuplicateDoesNotWaitOnRowLock(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	id, _ := ingest(t, pool, "p", "busy", "t", `{"v": 1}`)
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck
	if _, err := holder.Exec(ctx, `SELECT 1 FROM webhooks.inbox WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`); err != nil {
		t.Fatal(err)
	}
	var outcome string
	if err := tx.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('p', 'busy', 't', '{"v": 1}')`).Scan(&outcome); err != nil {
		t.Fatalf("duplicate of a locked row: %v", err)
	}
	if outcome != "duplicate" {
		t.Fatalf("outcome %q", outcome)
	}
	// A changed payload has to take the lock, and says so.
	_, err = tx.Exec(ctx, `SELECT webhooks.ingest_webhook('p', 'busy', 't', '{"v": 2}')`)
	wantPgError(t, err, "55P03", "lock")
}

// TestIngestConcurrentChangedPayloads: 16 connections deliver the same 200
// pending events, each with its own payload, concurrently. Exactly one
// 'created' per event; every other delivery is 'updated' or 'duplicate';
// the stored payload is one that was sent, and the revision counts the
// updates exactly (one plus the 'updated' answers).
func TestIngestConcurrentChangedPayloads(t *testing.T) {
	t.Parallel()
	const events, senders = 200, 16
	pool := NewPool(t, senders)
	ctx := context.Background()
	var mu sync.Mutex
	created, updated := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < events; i++ {
				key := fmt.Sprintf("k%03d", (i*7+s*13)%events)
				var outcome string
				if err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('p', $1, 't', $2::jsonb)`,
					key, fmt.Sprintf(`{"sender": %d}`, s)).Scan(&outcome); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				switch outcome {
				case "created":
					created[key]++
				case "updated":
					updated[key]++
				case "duplicate":
				default:
					errs <- fmt.Errorf("%s: outcome %q", key, outcome)
				}
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT external_id, revision, (payload->>'sender')::int FROM webhooks.events`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key      string
		Revision int
		Sender   int
	}
	stored, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != events {
		t.Fatalf("rows %d, want %d", len(stored), events)
	}
	for _, r := range stored {
		if created[r.Key] != 1 {
			t.Errorf("%s created %d times", r.Key, created[r.Key])
		}
		if r.Revision != 1+updated[r.Key] {
			t.Errorf("%s: revision %d, but %d deliveries answered 'updated'", r.Key, r.Revision, updated[r.Key])
		}
		if r.Sender < 0 || r.Sender >= senders {
			t.Errorf("%s: stored payload from sender %d", r.Key, r.Sender)
		}
	}
}
