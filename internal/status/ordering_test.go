package status_test

import (
	"context"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/status"
)

// TestReadOrdering: an ordered provider's settings, its blocked sequence
// (a head that failed, with the events waiting behind it) and the
// longest-blocked sequences; a provider no longer ordered that still
// counts events processed out of order is listed too, as not ordered.
func TestReadOrdering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)
	for _, e := range []struct{ id, payload string }{
		{"a1", `{"customer": "cus_a", "seq": 1}`}, {"a2", `{"customer": "cus_a", "seq": 2}`},
		{"a3", `{"customer": "cus_a", "seq": 3}`}, {"b1", `{"customer": "cus_b", "seq": 1}`},
	} {
		pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', $1, 'customer.updated', $2::jsonb)`, e.id, e.payload)
	}
	// The claim hands out the heads, a1 and b1: a1 fails (its sequence
	// blocks, a2 and a3 wait), b1 is processed.
	if n := scanInt(t, pool, `SELECT count(*) FROM webhooks.claim('w', 10) AS c
		WHERE CASE c.external_id WHEN 'a1' THEN webhooks.fail(c.id, 'w', c.attempts, 'boom') = 'pending'
		                         ELSE webhooks.complete(c.id, 'w', c.attempts) END`); n != 2 {
		t.Fatalf("%d heads claimed and settled, want 2 (a1 failed, b1 processed)", n)
	}
	pgtest.Exec(t, pool, `INSERT INTO webhooks.out_of_order_pruned (provider, events) VALUES ('gone', 3)`)

	st, err := status.ReadOrdering(ctx, pool, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Providers) != 2 {
		t.Fatalf("providers %+v, want gone and stripe", st.Providers)
	}
	gone, stripe := st.Providers[0], st.Providers[1]
	if gone.Provider != "gone" || gone.Ordered || gone.OutOfOrder != 3 || gone.Blocked != 0 {
		t.Errorf("gone: %+v, want not ordered, 3 out of order, none blocked", gone)
	}
	if stripe.Provider != "stripe" || !stripe.Ordered || stripe.KeyPath != "$.customer" || stripe.OrderPath == nil || *stripe.OrderPath != "$.seq" ||
		!stripe.DeadBlocks || stripe.Blocked != 1 || stripe.Waiting != 2 || stripe.OldestBlockedSince == nil {
		t.Errorf("stripe: %+v, want ordered on $.customer by $.seq, dead_blocks, 1 sequence blocked since a time, 2 waiting", stripe)
	}
	if len(st.Blocked) != 1 {
		t.Fatalf("blocked %+v, want cus_a's sequence", st.Blocked)
	}
	b := st.Blocked[0]
	if b.Key == nil || *b.Key != "cus_a" || b.HeadExternal != "a1" || b.HeadStatus != "pending" || b.Attempts != 1 ||
		b.Waiting != 2 || b.LastError == nil || *b.LastError != "boom" {
		t.Errorf("blocked sequence %+v, want cus_a headed by a1 (pending, 1 attempt, boom) with 2 waiting", b)
	}

	// One provider; no limit reads no sequences.
	one, err := status.ReadOrdering(ctx, pool, "gone", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Providers) != 1 || one.Providers[0].Provider != "gone" || len(one.Blocked) != 0 {
		t.Errorf("provider gone: %+v", one)
	}
	counts, err := status.ReadOrdering(ctx, pool, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts.Providers) != 2 || len(counts.Blocked) != 0 {
		t.Errorf("without a limit: %+v, want both providers and no sequences", counts)
	}
}
