package tests

import (
	"context"
	"testing"
)

// TestRescueWorker: rescue_worker() takes back what one worker still holds
// under its name — pending again with the attempt counted and the reason
// kept, dead at max_attempts — and leaves every other worker's leases and
// every finished event alone; a worker role granted grant_worker may call it.
func TestRescueWorker(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		ingest(t, pool, "p", key, "t", `{}`)
	}
	lost := claim(t, pool, "host:1:abc/w0", 2, "5 minutes")      // a, b: the claim whose reply was lost
	other := claim(t, pool, "host:1:abc/w1", 1, "5 minutes")     // c: another worker of the same process
	prefixed := claim(t, pool, "host:1:abc/w0x", 1, "5 minutes") // d: a name that merely starts alike
	last := claim(t, pool, "host:1:abc/w0", 1, "5 minutes")      // e: on its last attempt
	if len(lost) != 2 || len(other) != 1 || len(prefixed) != 1 || len(last) != 1 {
		t.Fatalf("claims: %v %v %v %v", lost, other, prefixed, last)
	}
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, last[0].ID)
	// a finished one of w0's: complete() already took its lease.
	execSQL(t, pool, `CREATE TABLE public.handled (event_id bigint NOT NULL, worker text NOT NULL)`)
	if ok, err := completeWithWrite(ctx, pool, lost[1], "host:1:abc/w0"); err != nil || !ok {
		t.Fatalf("complete = %v, %v", ok, err)
	}

	worker := roleConn(t, conf.URL(), "rescue_worker_role", "grant_worker")
	var rescued, dead int
	if err := worker.QueryRow(ctx, `SELECT rescued, dead FROM webhooks.rescue_worker('host:1:abc/w0')`).Scan(&rescued, &dead); err != nil {
		t.Fatal(err)
	}
	if rescued != 1 || dead != 1 {
		t.Fatalf("rescue_worker = (%d, %d), want (1, 1): a back to pending, e dead", rescued, dead)
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
	// Nothing left: a second call finds nothing.
	if err := pool.QueryRow(ctx, `SELECT rescued, dead FROM webhooks.rescue_worker('host:1:abc/w0')`).Scan(&rescued, &dead); err != nil || rescued+dead != 0 {
		t.Fatalf("second rescue_worker = (%d, %d), %v", rescued, dead, err)
	}
	wantPgError(t, func() error { _, err := pool.Exec(ctx, `SELECT * FROM webhooks.rescue_worker('')`); return err }(), "22023", "worker")
}
