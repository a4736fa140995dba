package status_test

import (
	"context"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/status"
)

// TestReadQueue: the queue counts events by status, and its age is the
// oldest claimable event's wait: not an event held behind an earlier one of
// its sequence, nor one whose retry is not due, however old they are.
func TestReadQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)

	empty, err := status.ReadQueue(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if empty != (status.Queue{}) {
		t.Fatalf("an empty queue reads %+v", empty)
	}

	// e1..e7 waited 1..7 minutes; the claim takes the oldest three (e7, e6,
	// e5), one of which dies (max_attempts 1). e4, 4 minutes old, is the
	// oldest claimable event left; held (an hour old, held behind its
	// sequence) and later (retry due in an hour) are pending too but not
	// claimable.
	pgtest.Exec(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, max_attempts, received_at, run_after)
		SELECT 'p', 'e' || g, 't', '{}', 1, now() - g * interval '1 minute', now() - g * interval '1 minute'
		FROM generate_series(1, 7) AS g`)
	rows, err := pool.Query(ctx, `SELECT id, attempts FROM webhooks.claim('w', 3)`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var atts []int32
	for rows.Next() {
		var id int64
		var a int32
		if err := rows.Scan(&id, &a); err != nil {
			t.Fatal(err)
		}
		ids, atts = append(ids, id), append(atts, a)
	}
	if rows.Err() != nil || len(ids) != 3 {
		t.Fatalf("claimed %d events (%v), want 3", len(ids), rows.Err())
	}
	if got := scanInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE webhooks.fail($1, 'w', $2, 'boom') = 'dead'`, ids[0], atts[0]); got != 1 {
		t.Fatalf("%d events died, want 1", got)
	}
	pgtest.Exec(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, received_at, run_after, order_held)
		VALUES ('p', 'held', 't', '{}', now() - interval '1 hour', now() - interval '1 hour', true),
		       ('p', 'later', 't', '{}', now() - interval '1 hour', now() + interval '1 hour', false)`)

	q, err := status.ReadQueue(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if q.Pending != 6 || q.Processing != 2 || q.Dead != 1 {
		t.Errorf("pending %d, processing %d, dead %d; want 6, 2, 1", q.Pending, q.Processing, q.Dead)
	}
	if q.OldestPending < 235 || q.OldestPending > 300 {
		t.Errorf("the oldest claimable event waited %.0f s, want about 240 (e4's 4 minutes)", q.OldestPending)
	}
}
