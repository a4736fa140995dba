package tests

import (
	"context"
	"testing"
	"time"
)

// TestFencingLostLease: a worker whose lease expired, was rescued and
// re-claimed by another worker cannot complete, fail or heartbeat, and the
// writes of its transaction roll back with it.
func TestFencingLostLease(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	execSQL(t, pool, `CREATE TABLE public.handled (event_id bigint NOT NULL, worker text NOT NULL)`)

	tests := []struct {
		name       string
		reclaimBy  string // who re-claims after the rescue (may be the same worker name)
		staleWrite bool   // the stale worker also tries to complete after the new owner finished
	}{
		{name: "other worker re-claims", reclaimBy: "w2"},
		{name: "same worker name re-claims", reclaimBy: "w1"},
		{name: "stale completion after the new owner completed", reclaimBy: "w2", staleWrite: true},
	}
	for i, tc := range tests {
		key := string(rune('a' + i))
		id, _ := ingest(t, pool, "p", key, "t", `{}`)
		first := claim(t, pool, "w1", 1, "50 milliseconds")
		if len(first) != 1 || first[0].ID != id || first[0].Attempts != 1 {
			t.Fatalf("%s: first claim %v", tc.name, first)
		}
		time.Sleep(120 * time.Millisecond)
		var rescued, dead int
		if err := pool.QueryRow(ctx, `SELECT rescued, dead FROM webhooks.rescue_leases()`).Scan(&rescued, &dead); err != nil {
			t.Fatal(err)
		}
		if rescued != 1 || dead != 0 {
			t.Fatalf("%s: rescue_leases = (%d, %d), want (1, 0)", tc.name, rescued, dead)
		}
		second := claim(t, pool, tc.reclaimBy, 1, "5 minutes")
		if len(second) != 1 || second[0].ID != id || second[0].Attempts != 2 {
			t.Fatalf("%s: second claim %v", tc.name, second)
		}
		if tc.staleWrite {
			if ok, err := completeWithWrite(ctx, pool, second[0], tc.reclaimBy); err != nil || !ok {
				t.Fatalf("%s: new owner's completion = %v, %v", tc.name, ok, err)
			}
		}

		// Another worker guessing the current attempt number is refused too.
		if tc.reclaimBy != "w1" && !tc.staleWrite {
			impostor := second[0]
			if ok, err := completeWithWrite(ctx, pool, impostor, "w1"); err != nil || ok {
				t.Fatalf("%s: complete by a worker that does not hold the lease = %v, %v", tc.name, ok, err)
			}
		}

		// The stale worker: its handler writes, then complete() refuses.
		ok, err := completeWithWrite(ctx, pool, first[0], "w1")
		if err != nil || ok {
			t.Fatalf("%s: stale complete = %v, %v; want false", tc.name, ok, err)
		}
		var status *string
		if err := pool.QueryRow(ctx, `SELECT webhooks.fail($1, 'w1', 1, 'late failure')`, id).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != nil {
			t.Fatalf("%s: stale fail = %q, want NULL", tc.name, *status)
		}
		var beat bool
		if err := pool.QueryRow(ctx, `SELECT webhooks.heartbeat($1, 'w1', 1, '1 hour')`, id).Scan(&beat); err != nil {
			t.Fatal(err)
		}
		if beat {
			t.Fatalf("%s: stale heartbeat succeeded", tc.name)
		}
		wantWrites := int64(0)
		if tc.staleWrite {
			wantWrites = 1 // the new owner's, not the stale one's
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM public.handled WHERE event_id = $1`, id); n != wantWrites {
			t.Fatalf("%s: handler writes = %d, want %d", tc.name, n, wantWrites)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM public.handled WHERE event_id = $1 AND worker = 'w1' AND $2`, id, tc.reclaimBy != "w1"); n != 0 {
			t.Fatalf("%s: the stale worker's write survived", tc.name)
		}
		if !tc.staleWrite {
			// The current owner is unaffected by the stale calls.
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'processing' AND locked_by = $2 AND attempts = 2 AND locked_until > now() + interval '4 minutes'`, id, tc.reclaimBy); n != 1 {
				t.Fatalf("%s: the stale calls changed the new owner's lease", tc.name)
			}
			if ok, err := completeWithWrite(ctx, pool, second[0], tc.reclaimBy); err != nil || !ok {
				t.Fatalf("%s: owner's completion = %v, %v", tc.name, ok, err)
			}
		}
	}
}

// TestHeartbeatExtendsLease: the owner's heartbeat pushes locked_until out,
// so a rescue pass leaves the event alone.
func TestHeartbeatExtendsLease(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	execSQL(t, pool, `CREATE TABLE public.handled (event_id bigint NOT NULL, worker text NOT NULL)`)
	id, _ := ingest(t, pool, "p", "long", "t", `{}`)
	c := claim(t, pool, "w1", 1, "100 milliseconds")
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT webhooks.heartbeat($1, 'w1', 1, '10 minutes')`, id).Scan(&ok); err != nil || !ok {
		t.Fatalf("heartbeat = %v, %v", ok, err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := queryInt(t, pool, `SELECT rescued FROM webhooks.rescue_leases()`); n != 0 {
		t.Fatalf("rescued %d events whose lease was extended", n)
	}
	if ok, err := completeWithWrite(ctx, pool, c[0], "w1"); err != nil || !ok {
		t.Fatalf("complete after heartbeat = %v, %v", ok, err)
	}
	_, err := pool.Exec(ctx, `SELECT webhooks.heartbeat($1, 'w1', 1, '-1 minute')`, id)
	wantPgError(t, err, "22023", "extend must be a positive interval")
}
