package tests

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomText returns n characters drawn from alphabet at random (the
// first never '0'), so that neither the heap nor an index entry can
// compress it below the B-tree limit.
func randomText(n int, alphabet string) string {
	var b strings.Builder
	for b.Len() < n {
		c := alphabet[rand.IntN(len(alphabet))]
		if b.Len() == 0 && c == '0' {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

const (
	digits  = "0123456789"
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// TestOrderingIngestUnindexableValues: a payload whose key or order value
// the sequence index cannot hold (a 6000-digit number at order_path, a key
// or a text order value of 3000 bytes) is stored unordered and runnable,
// never refused: by ingest_webhook() and by ingest_batch() beside an ordered
// and an unordered neighbour, each created. Each such event is counted in
// webhooks.order_skipped under its reason, with its external_id and its
// size. Before, the 6000-digit number failed the INSERT with SQLSTATE 54000
// (index row size), so the delivery was answered 400 and its batch fell
// back to storing each delivery alone; the 3000-byte key and text were left
// unordered without a trace.
func TestOrderingIngestUnindexableValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, payload, reason, detail string
	}{
		{"6000-digit order number", `{"customer": "cus_1", "seq": ` + randomText(6000, digits) + `}`,
			"order number", "order number of "},
		{"key of 3000 bytes", `{"customer": "` + randomText(3000, letters) + `", "seq": 1}`,
			"key", "key of 3000 bytes (over 255)"},
		{"order text of 3000 bytes", `{"customer": "cus_1", "seq": "` + randomText(3000, letters) + `"}`,
			"order text", "order text of 3000 bytes (over 255)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := NewPool(t, 2)
			execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)

			if _, outcome := ingest(t, pool, "stripe", "one", "invoice.paid", tc.payload); outcome != "created" {
				t.Fatalf("ingest_webhook: %s, want created", outcome)
			}
			rows, err := pool.Query(ctx, `SELECT ordinal, outcome, coalesce(error, '') FROM webhooks.ingest_batch(
				ARRAY['stripe', 'stripe', 'github'], ARRAY['two', 'three', 'g1'], ARRAY['invoice.paid', 'invoice.paid', 'push'],
				ARRAY[$1, '{"customer": "cus_2", "seq": 7}', '{"ref": "main"}']::jsonb[]) ORDER BY ordinal`, tc.payload)
			if err != nil {
				t.Fatalf("ingest_batch: %v", err)
			}
			for rows.Next() {
				var ord int
				var outcome, msg string
				if err := rows.Scan(&ord, &outcome, &msg); err != nil {
					t.Fatal(err)
				}
				if outcome != "created" {
					t.Errorf("ingest_batch element %d: %s %s, want created", ord, outcome, msg)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("ingest_batch: %v", err)
			}

			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe'
				AND external_id IN ('one', 'two') AND order_key IS NULL AND order_num IS NULL AND order_text IS NULL
				AND NOT order_held AND status = 'pending'`); n != 2 {
				t.Fatalf("%d of 2 events stored unordered and runnable", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'three' AND order_key = 'cus_2' AND order_num = 7`); n != 1 {
				t.Fatalf("the ordered neighbour is not in its sequence")
			}
			var events int64
			var last, detail string
			err = pool.QueryRow(ctx, `SELECT events, last_external_id, last_detail FROM webhooks.order_skipped
				WHERE provider = 'stripe' AND reason = $1`, tc.reason).Scan(&events, &last, &detail)
			if err != nil {
				t.Fatalf("order_skipped for %q: %v", tc.reason, err)
			}
			if events != 2 || last != "two" || !strings.HasPrefix(detail, tc.detail) {
				t.Fatalf("order_skipped: %d events, last %q (%q); want 2, \"two\", %q...", events, last, detail, tc.detail)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_skipped`); n != 1 {
				t.Fatalf("%d order_skipped rows, want 1", n)
			}
			// Unordered events run like any other.
			if got := claim(t, pool, "w", 10, "1 minute"); len(got) != 4 {
				t.Fatalf("claimed %d events, want all 4", len(got))
			}
		})
	}
}

// TestOrderingSetOrderingOverUnindexableValues: set_ordering() over a
// backlog of pending events that includes a 6000-digit order number and a
// 3000-byte key succeeds; those two stay unordered and runnable, counted in
// webhooks.order_skipped, and the others are ordered. Before, the UPDATE of
// the backlog failed with SQLSTATE 54000 and ordering could not be turned on.
func TestOrderingSetOrderingOverUnindexableValues(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ingest(t, pool, "shop", "big-number", "orders/updated", `{"customer": "c1", "seq": `+randomText(6000, digits)+`}`)
	ingest(t, pool, "shop", "big-key", "orders/updated", `{"customer": "`+randomText(3000, letters)+`", "seq": 2}`)
	ingest(t, pool, "shop", "a", "orders/updated", `{"customer": "c1", "seq": 1}`)
	ingest(t, pool, "shop", "b", "orders/updated", `{"customer": "c1", "seq": 3}`)

	if _, err := pool.Exec(context.Background(), `SELECT webhooks.set_ordering('shop', '$.customer', '$.seq')`); err != nil {
		t.Fatalf("set_ordering over the backlog: %v", err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('big-number', 'big-key')
		AND order_key IS NULL AND NOT order_held`); n != 2 {
		t.Fatalf("%d of the 2 unindexable events unordered and runnable", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_key = 'c1' AND external_id IN ('a', 'b')
		AND order_held = (external_id = 'b')`); n != 2 {
		t.Fatalf("the two usable events are not ordered (a runnable, b held behind it)")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_skipped WHERE provider = 'shop'
		AND ((reason = 'order number' AND last_external_id = 'big-number') OR (reason = 'key' AND last_external_id = 'big-key'))
		AND events = 1`); n != 2 {
		t.Fatalf("order_skipped does not count the two events by reason")
	}
}
