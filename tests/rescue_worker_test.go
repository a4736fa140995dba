package tests

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRescueWorker: rescue_worker() takes back what one worker still holds
// under its name — pending again with the attempt counted and the reason
// kept, dead at max_attempts — and leaves every other worker's leases and
// every finished event alone. A row another transaction holds (the worker's
// own, on a broken connection) is not waited for: it is counted in held and
// taken back by a later call once that transaction ended. Any role granted
// grant_worker may call it, with any worker's name: here one that never
// claimed anything (the roles granted grant_worker trust each other).
func TestRescueWorker(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
		ingest(t, pool, "p", key, "t", `{}`)
	}
	lost := claim(t, pool, "host:1:abc/w0", 2, "5 minutes")      // a, b: the claim whose reply was lost
	other := claim(t, pool, "host:1:abc/w1", 1, "5 minutes")     // c: another worker of the same process
	prefixed := claim(t, pool, "host:1:abc/w0x", 1, "5 minutes") // d: a name that merely starts alike
	last := claim(t, pool, "host:1:abc/w0", 1, "5 minutes")      // e: on its last attempt
	held := claim(t, pool, "host:1:abc/w0", 1, "5 minutes")      // f: row-locked by an abandoned transaction
	if len(lost) != 2 || len(other) != 1 || len(prefixed) != 1 || len(last) != 1 || len(held) != 1 {
		t.Fatalf("claims: %v %v %v %v %v", lost, other, prefixed, last, held)
	}
	holder, err := holdConn(t, pool).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // rolled back below
	if _, err := holder.Exec(ctx, `SELECT 1 FROM webhooks.inbox WHERE id = $1 FOR UPDATE`, held[0].ID); err != nil {
		t.Fatal(err)
	}
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, last[0].ID)
	// a finished one of w0's: complete() already took its lease.
	execSQL(t, pool, `CREATE TABLE public.handled (event_id bigint NOT NULL, worker text NOT NULL)`)
	if ok, err := completeWithWrite(ctx, pool, lost[1], "host:1:abc/w0"); err != nil || !ok {
		t.Fatalf("complete = %v, %v", ok, err)
	}

	worker := roleConn(t, conf.URL(), "rescue_worker_role", "grant_worker")
	var rescued, dead, stillHeld int
	rescue := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) {
		t.Helper()
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := q.QueryRow(qctx, `SELECT rescued, dead, held FROM webhooks.rescue_worker('host:1:abc/w0')`).Scan(&rescued, &dead, &stillHeld); err != nil {
			t.Fatalf("rescue_worker (it must not wait for a row lock): %v", err)
		}
	}
	rescue(worker)
	if rescued != 1 || dead != 1 || stillHeld != 1 {
		t.Fatalf("rescue_worker = (%d, %d, %d), want (1, 1, 1): a back to pending, e dead, f held", rescued, dead, stillHeld)
	}
	tests := []struct {
		id                   int64
		status, lockedBy     string
		attempts, errorsKept int64
	}{
		{lost[0].ID, "pending", "", 1, 1},
		{lost[1].ID, "processed", "", 1, 0},
		{other[0].ID, "processing", "host:1:abc/w1", 1, 0},
		{prefixed[0].ID, "processing", "host:1:abc/w0x", 1, 0},
		{last[0].ID, "dead", "", 1, 1},
		{held[0].ID, "processing", "host:1:abc/w0", 1, 0},
	}
	for _, tc := range tests {
		var status, lockedBy string
		var attempts int64
		if err := pool.QueryRow(ctx, `SELECT status, coalesce(locked_by, ''), attempts FROM webhooks.events WHERE id = $1`, tc.id).
			Scan(&status, &lockedBy, &attempts); err != nil {
			t.Fatal(err)
		}
		kept := queryInt(t, pool, `SELECT count(*) FROM webhooks.event_errors WHERE event_id = $1 AND error LIKE '%given back by its worker%'`, tc.id)
		if status != tc.status || lockedBy != tc.lockedBy || attempts != tc.attempts || kept != tc.errorsKept {
			t.Errorf("event %d: (%s, %q, attempts %d, %d errors kept), want (%s, %q, %d, %d)",
				tc.id, status, lockedBy, attempts, kept, tc.status, tc.lockedBy, tc.attempts, tc.errorsKept)
		}
	}
	// The lost claim's old owner can no longer complete what it gave back.
	if ok, err := completeWithWrite(ctx, pool, lost[0], "host:1:abc/w0"); err != nil || ok {
		t.Fatalf("complete after rescue_worker = %v, %v; want false", ok, err)
	}
	// The abandoned transaction ends: the next call takes f back.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rescue(pool)
	if rescued != 1 || dead != 0 || stillHeld != 0 {
		t.Fatalf("rescue_worker after the lock was released = (%d, %d, %d), want (1, 0, 0)", rescued, dead, stillHeld)
	}
	// Nothing left: another call finds nothing.
	rescue(pool)
	if rescued+dead+stillHeld != 0 {
		t.Fatalf("last rescue_worker = (%d, %d, %d)", rescued, dead, stillHeld)
	}
	wantPgError(t, func() error { _, err := pool.Exec(ctx, `SELECT * FROM webhooks.rescue_worker('')`); return err }(), "22023", "worker")
}
