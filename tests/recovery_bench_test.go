package tests

import (
	"context"
	"testing"
)

// BenchmarkFindSequenceGaps measures gap detection over a 1,000,000-id
// window (go test ./tests/ -run '^$' -bench FindSequenceGaps -benchtime 5x):
//
//   - dense: 999,990 received ids, 10 holes;
//   - sparse: 1,000 received ids, 999,000 holes (the answer is the cost);
//
// each against the textbook anti-join over generate_series.
func BenchmarkFindSequenceGaps(b *testing.B) {
	pool := NewPool(b, 2)
	ctx := context.Background()
	execSQL(b, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'dense', g::text, 't', '{}' FROM generate_series(1, 1000000) g WHERE g % 100000 <> 7`)
	execSQL(b, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'sparse', (g * 1000)::text, 't', '{}' FROM generate_series(1, 1000) g`)
	execSQL(b, pool, `VACUUM ANALYZE webhooks.inbox, webhooks.keys`)
	for _, bc := range []struct{ name, provider, how string }{
		{"dense/lead", "dense", "lead"},
		{"dense/anti-join", "dense", "naive"},
		{"sparse/lead", "sparse", "lead"},
		{"sparse/anti-join", "sparse", "naive"},
	} {
		query := `SELECT count(*) FROM webhooks.find_sequence_gaps($1, 1, 1000000)`
		if bc.how == "naive" {
			query = `SELECT count(*) FROM generate_series(1, 1000000) AS g (n)
				WHERE NOT EXISTS (SELECT FROM webhooks.events e WHERE e.provider = $1 AND e.external_id = g.n::text)
				  AND NOT EXISTS (SELECT FROM webhooks.tombstones t WHERE t.provider = $1 AND t.external_id = g.n::text)`
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				var n int64
				if err := pool.QueryRow(ctx, query, bc.provider).Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
