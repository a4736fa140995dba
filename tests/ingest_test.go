package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestIngestConcurrentDuplicates delivers the same 1,000 ids from 32
// goroutines, each in its own order, and requires exactly one row and exactly
// one 'created' per id.
func TestIngestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	const ids, senders = 1000, 32
	pool := NewPool(t, senders)
	ctx := context.Background()

	var mu sync.Mutex
	created := map[string]int{}
	eventIDs := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			order := rand.New(rand.NewPCG(seed, seed*7+1)).Perm(ids)
			for _, i := range order {
				key := fmt.Sprintf("job_%04d", i)
				var id int64
				var outcome string
				err := pool.QueryRow(ctx,
					`SELECT event_id, outcome FROM webhooks.ingest_webhook('sume', $1, 'job.completed', $2::jsonb)`,
					key, fmt.Sprintf(`{"job_id": %q, "status": "COMPLETED"}`, key)).Scan(&id, &outcome)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if outcome == "created" {
					created[key]++
				} else if outcome != "duplicate" {
					mu.Unlock()
					errs <- fmt.Errorf("%s: unexpected outcome %q for an identical payload", key, outcome)
					return
				}
				if eventIDs[key] == nil {
					eventIDs[key] = map[int64]bool{}
				}
				eventIDs[key][id] = true
				mu.Unlock()
			}
		}(uint64(s + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != ids {
		t.Fatalf("rows = %d, want %d", n, ids)
	}
	if len(created) != ids {
		t.Fatalf("ids with a 'created' = %d, want %d", len(created), ids)
	}
	for key, n := range created {
		if n != 1 {
			t.Errorf("%s created %d times", key, n)
		}
		if len(eventIDs[key]) != 1 {
			t.Errorf("%s answered with %d different event ids", key, len(eventIDs[key]))
		}
	}
}

// TestIngestOutcomes covers created, updated (pending + new payload),
// duplicate (same payload) and duplicate once the event is no longer pending.
func TestIngestOutcomes(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)

	id, outcome := ingest(t, pool, "sume", "job_1", "job.completed", `{"v": 1}`)
	if outcome != "created" {
		t.Fatalf("first delivery: %q", outcome)
	}
	steps := []struct {
		name, eventType, payload, want string
		before                         func()
	}{
		{name: "same payload", eventType: "job.completed", payload: `{"v": 1}`, want: "duplicate"},
		{name: "same payload, keys reordered", eventType: "job.completed", payload: `{ "v":1 }`, want: "duplicate"},
		{name: "new payload while pending", eventType: "job.failed", payload: `{"v": 2}`, want: "updated"},
		{name: "new payload while processing", eventType: "job.completed", payload: `{"v": 3}`, want: "duplicate",
			before: func() { claim(t, pool, "w1", 10, "5 minutes") }},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		gotID, got := ingest(t, pool, "sume", "job_1", s.eventType, s.payload)
		if got != s.want || gotID != id {
			t.Fatalf("%s: (%d, %q), want (%d, %q)", s.name, gotID, got, id, s.want)
		}
	}
	var payload, eventType string
	var revision int
	if err := pool.QueryRow(context.Background(),
		`SELECT payload::text, event_type, revision FROM webhooks.events WHERE id = $1`, id).Scan(&payload, &eventType, &revision); err != nil {
		t.Fatal(err)
	}
	if payload != `{"v": 2}` || eventType != "job.failed" || revision != 2 {
		t.Fatalf("stored (%s, %s, rev %d); want the reconciled payload {\"v\": 2}, job.failed, rev 2", payload, eventType, revision)
	}

	// The same id under another provider is another event.
	if _, got := ingest(t, pool, "stripe", "job_1", "job.completed", `{"v": 1}`); got != "created" {
		t.Fatalf("other provider: %q", got)
	}
}

// TestIngestProcessedAndDeadAreDuplicates: once processed or dead, a
// redelivery with another payload writes nothing.
func TestIngestProcessedAndDeadAreDuplicates(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	for _, final := range []string{"processed", "dead"} {
		key := "evt_" + final
		id, _ := ingest(t, pool, "p", key, "t", `{"v": 1}`)
		c := claim(t, pool, "w", 1, "1 minute")
		if len(c) != 1 || c[0].ID != id {
			t.Fatalf("claim %v", c)
		}
		if final == "processed" {
			execSQL(t, pool, `SELECT webhooks.complete($1, 'w', 1)`, id)
		} else {
			execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, id)
			execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 1, 'boom')`, id)
		}
		var before string
		if err := pool.QueryRow(ctx, `SELECT updated_at::text FROM webhooks.events WHERE id = $1`, id).Scan(&before); err != nil {
			t.Fatal(err)
		}
		if _, got := ingest(t, pool, "p", key, "t", `{"v": 2}`); got != "duplicate" {
			t.Fatalf("%s: redelivery = %q", final, got)
		}
		var after, payload string
		if err := pool.QueryRow(ctx, `SELECT updated_at::text, payload::text FROM webhooks.events WHERE id = $1`, id).Scan(&after, &payload); err != nil {
			t.Fatal(err)
		}
		if after != before || payload != `{"v": 1}` {
			t.Fatalf("%s: a duplicate wrote to the row (updated_at %s -> %s, payload %s)", final, before, after, payload)
		}
	}
}

// TestIngestNotifyOptIn: NOTIFY webhooks_events only when asked for, and only
// for rows actually written.
func TestIngestNotifyOptIn(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN webhooks_events`); err != nil {
		t.Fatal(err)
	}
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('quiet', 'a', 't', '{}')`)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('loud', 'b', 't', '{}', notify => true)`)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('loud', 'b', 't', '{}', notify => true)`) // duplicate: no notify
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('loud2', 'c', 't', '{}', 'webhook', true)`)

	var got []string
	for len(got) < 2 {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, n.Payload)
	}
	if got[0] != "loud" || got[1] != "loud2" {
		t.Fatalf("notifications %v, want [loud loud2]", got)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if n, err := conn.Conn().WaitForNotification(wctx); err == nil {
		t.Fatalf("unexpected notification %q", n.Payload)
	}
}
