package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// TestReplayMany: replay(bigint[], text) puts every listed event that is not
// being processed back to pending (attempts 0, runnable now, errors cleared),
// audits each one, skips unknown, processing and pruned events, counts an id
// listed twice once, and refuses a blank reason or more than 10,000 ids.
func TestReplayMany(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	mk := func(key string) int64 {
		id, _ := ingest(t, pool, "rm", key, "job.completed", `{"k":"`+key+`"}`)
		return id
	}
	processed, dead, pending, processing, pruned := mk("processed"), mk("dead"), mk("pending"), mk("processing"), mk("pruned")
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now(), attempts = 2 WHERE id IN ($1, $2)`, processed, pruned)
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'dead', attempts = 25, last_error = 'boom' WHERE id = $1`, dead)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() + interval '1 hour' WHERE id IN ($1, $2)`, pending, dead)
	execSQL(t, pool, `UPDATE webhooks.events SET payload = NULL, payload_pruned_at = now() WHERE id = $1`, pruned)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() - interval '1 day' WHERE id = $1`, processing)
	if got := claim(t, pool, "w1", 1, "5 minutes"); len(got) != 1 || got[0].ID != processing {
		t.Fatalf("claimed %v, want event %d", got, processing)
	}

	var n int
	if err := pool.QueryRow(ctx, `SELECT webhooks.replay($1::bigint[], 'bulk: fixed the handler')`,
		[]int64{processed, processed, dead, pending, processing, pruned, 999999999}).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("replayed %d, want 3 (processed, dead, pending)", n)
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.events
		WHERE id IN ($1, $2, $3) AND status = 'pending' AND attempts = 0 AND run_after <= now()
		  AND processed_at IS NULL AND last_error IS NULL`, processed, dead, pending); got != 3 {
		t.Fatalf("%d of 3 events pending, reset and runnable", got)
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'processing' AND locked_by = 'w1'`, processing); got != 1 {
		t.Fatal("the event being processed was touched")
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'processed'`, pruned); got != 1 {
		t.Fatal("the pruned event was touched")
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE reason = 'bulk: fixed the handler'
		AND ((event_id = $1 AND previous_status = 'processed' AND previous_attempts = 2)
		  OR (event_id = $2 AND previous_status = 'dead' AND previous_attempts = 25)
		  OR (event_id = $3 AND previous_status = 'pending' AND previous_attempts = 0))`, processed, dead, pending); got != 3 {
		t.Fatalf("%d audit rows, want 3", got)
	}

	big := make([]int64, 10001)
	for i := range big {
		big[i] = int64(i + 1)
	}
	for _, tt := range []struct {
		ids    any
		reason any
		code   string
		want   string
	}{
		{[]int64{processed}, nil, "22023", "reason must not be null"},
		{[]int64{processed}, "  ", "22023", "reason must not be blank"},
		{nil, "x", "22004", "event_ids must not be null"},
		{big, "x", "54000", "10001 event ids in one replay; the limit is 10000"},
	} {
		_, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint[], $2)`, tt.ids, tt.reason)
		wantPgError(t, err, tt.code, tt.want)
	}
	if err := pool.QueryRow(ctx, `SELECT webhooks.replay('{}'::bigint[], 'nothing')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("empty list: %d, %v", n, err)
	}
}

// TestReplayManyConcurrent: bulk replays of overlapping id sets in random
// order, racing each other and workers that claim and complete, never
// deadlock or fail, and every replay they report is audited.
func TestReplayManyConcurrent(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 24)
	ctx := context.Background()
	const events = 200
	execSQL(t, pool, `SELECT count(*) FROM generate_series(1, $1) g,
		LATERAL webhooks.ingest_webhook('rc', 'e' || g, 'job.completed', '{}')`, events)
	ids := make([]int64, 0, events)
	rows, err := pool.Query(ctx, `SELECT id FROM webhooks.events WHERE provider = 'rc'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for g := range 8 { // bulk replays
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range 15 {
				set := make([]int64, 0, 120)
				for _, i := range rng.Perm(len(ids))[:100] {
					set = append(set, ids[i])
				}
				set = append(set, set[:20]...) // duplicates count once
				var n int64
				if err := pool.QueryRow(ctx, `SELECT webhooks.replay($1::bigint[], 'concurrent bulk')`, set).Scan(&n); err != nil {
					fail("replay: %v", err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	for w := range 8 { // workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for range 30 {
				rows, err := pool.Query(ctx, `SELECT id, attempts FROM webhooks.claim($1, 10)`, worker)
				if err != nil {
					fail("claim: %v", err)
					return
				}
				var got []claimed
				for rows.Next() {
					var c claimed
					_ = rows.Scan(&c.ID, &c.Attempts)
					got = append(got, c)
				}
				rows.Close()
				for _, c := range got {
					if _, err := pool.Exec(ctx, `SELECT webhooks.complete($1, $2, $3)`, c.ID, worker, c.Attempts); err != nil {
						fail("complete: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), strings.Join(failures[:1], ""))
	}
	if audited := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE reason = 'concurrent bulk'`); audited != total {
		t.Fatalf("replay reported %d, audited %d", total, audited)
	}
	if total == 0 {
		t.Fatal("nothing was replayed")
	}
}
