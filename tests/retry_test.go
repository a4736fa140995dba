package tests

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFailBackoffThenDead: each failure sends the event back to pending with
// an exponential, jittered backoff; the last allowed attempt makes it dead.
func TestFailBackoffThenDead(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	id, _ := ingest(t, pool, "p", "flaky", "t", `{}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 3 WHERE id = $1`, id)

	steps := []struct {
		attempt    int32
		wantStatus string
		minDelay   time.Duration
		maxDelay   time.Duration
	}{
		{attempt: 1, wantStatus: "pending", minDelay: 750 * time.Millisecond, maxDelay: 1250 * time.Millisecond},
		{attempt: 2, wantStatus: "pending", minDelay: 1500 * time.Millisecond, maxDelay: 2500 * time.Millisecond},
		{attempt: 3, wantStatus: "dead"},
	}
	for _, s := range steps {
		c := claim(t, pool, "w", 1, "1 minute")
		if len(c) != 1 || c[0].Attempts != s.attempt {
			t.Fatalf("attempt %d: claim %v", s.attempt, c)
		}
		// fail() and the read share one transaction, so now() is the same
		// instant in both: the delay read is exactly the backoff fail() set,
		// however long the machine takes between the two statements.
		var status string
		var delay time.Duration
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `SELECT webhooks.fail($1, 'w', $2, $3)`, id, s.attempt, fmt.Sprintf("boom %d", s.attempt)).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `SELECT run_after - now() FROM webhooks.events WHERE id = $1`, id).Scan(&delay); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if status != s.wantStatus {
			t.Fatalf("attempt %d: status %q, want %q", s.attempt, status, s.wantStatus)
		}
		if s.wantStatus == "pending" {
			if delay < s.minDelay || delay >= s.maxDelay {
				t.Fatalf("attempt %d: backoff %v, want in [%v, %v)", s.attempt, delay, s.minDelay, s.maxDelay)
			}
			if again := claim(t, pool, "w", 1, "1 minute"); len(again) != 0 {
				t.Fatalf("attempt %d: claimed during backoff: %v", s.attempt, again)
			}
			execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE id = $1`, id)
		}
	}
	var lastError string
	if err := pool.QueryRow(ctx, `SELECT last_error FROM webhooks.events WHERE id = $1 AND status = 'dead' AND attempts = 3`, id).Scan(&lastError); err != nil {
		t.Fatalf("dead row: %v", err)
	}
	if lastError != "boom 3" {
		t.Fatalf("last_error %q", lastError)
	}
	if c := claim(t, pool, "w", 1, "1 minute"); len(c) != 0 {
		t.Fatalf("a dead event was claimed: %v", c)
	}
}

// TestBackoffJitterSpreads: many events failing at once do not all retry at
// the same instant.
func TestBackoffJitterSpreads(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'p', 'e' || g, 't', '{}' FROM generate_series(1, 200) g`)
	execSQL(t, pool, `SELECT webhooks.fail(c.id, 'w', c.attempts, 'x') FROM webhooks.claim('w', 200) c`)
	n := queryInt(t, pool, `SELECT count(DISTINCT date_trunc('milliseconds', run_after)) FROM webhooks.events`)
	if n < 150 {
		t.Fatalf("200 simultaneous failures retry at only %d distinct instants", n)
	}
}

// TestRescueLeaseAtMaxAttemptsIsDead: an expired lease on the last attempt
// makes the event dead instead of pending.
func TestRescueLeaseAtMaxAttemptsIsDead(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	id, _ := ingest(t, pool, "p", "x", "t", `{}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, id)
	claim(t, pool, "w", 1, "10 milliseconds")
	time.Sleep(50 * time.Millisecond)
	if n := queryInt(t, pool, `SELECT dead FROM webhooks.rescue_leases()`); n != 1 {
		t.Fatalf("dead = %d", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'dead' AND last_error LIKE 'lease of w expired%'`); n != 1 {
		t.Fatal("event not dead with a lease-expired error")
	}
}
