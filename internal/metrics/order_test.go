package metrics_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// served returns the value of metric name for provider in one scrape, and
// whether it was served at all.
func served(t *testing.T, set *metrics.Set, name, provider string) (float64, bool) {
	t.Helper()
	mfs, err := set.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "provider" && l.GetValue() == provider {
					if c := m.GetCounter(); c != nil {
						return c.GetValue(), true
					}
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// process claims and completes every runnable event of the database once.
func process(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	pgtest.Exec(t, pool, `SELECT webhooks.complete(c.id, 'w', c.attempts) FROM webhooks.claim('w', 100) AS c`)
}

// TestOrderingMetrics: every ordered provider is served from 0;
// pginbox_out_of_order_total counts a late arrival and keeps counting it
// after prune() deleted it; pginbox_blocked_sequences counts a sequence
// whose head failed.
func TestOrderingMetrics(t *testing.T) {
	t.Parallel()
	pool := pgtest.PoolFor(t, pgtest.NewConfig(t).URL(), 2)
	set := metrics.New(pool)
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.n')`)
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('quiet', '$.c')`)
	for _, name := range []string{"pginbox_out_of_order_total", "pginbox_blocked_sequences"} {
		for _, p := range []string{"stripe", "quiet"} {
			if v, ok := served(t, set, name, p); !ok || v != 0 {
				t.Fatalf("%s{provider=%q} = %v (served: %t), want 0 from the start", name, p, v, ok)
			}
		}
	}

	// n = 2 runs first; n = 1 arrives after it ran: out of order.
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'later', 't', '{"customer": "cus_1", "n": 2}')`)
	process(t, pool)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'late', 't', '{"customer": "cus_1", "n": 1}')`)
	process(t, pool)
	var late bool
	if err := pool.QueryRow(context.Background(), `SELECT out_of_order FROM webhooks.events WHERE external_id = 'late' AND status = 'processed'`).Scan(&late); err != nil || !late {
		t.Fatalf("the late event: out_of_order %t (%v), want processed and marked", late, err)
	}
	// A head that fails blocks cus_2.
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'head', 't', '{"customer": "cus_2", "n": 1}')`)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'next', 't', '{"customer": "cus_2", "n": 2}')`)
	pgtest.Exec(t, pool, `SELECT webhooks.fail(c.id, 'w', c.attempts, 'boom') FROM webhooks.claim('w', 100) AS c`)

	if v, _ := served(t, set, "pginbox_out_of_order_total", "stripe"); v != 1 {
		t.Fatalf("pginbox_out_of_order_total{provider=stripe} = %v, want 1", v)
	}
	if v, _ := served(t, set, "pginbox_blocked_sequences", "stripe"); v != 1 {
		t.Fatalf("pginbox_blocked_sequences{provider=stripe} = %v, want 1", v)
	}
	if v, _ := served(t, set, "pginbox_out_of_order_total", "quiet"); v != 0 {
		t.Fatalf("pginbox_out_of_order_total{provider=quiet} = %v, want 0", v)
	}

	// Retention deletes the late event: the counter stays where it was.
	pgtest.Exec(t, pool, `UPDATE webhooks.events SET received_at = now() - interval '500 days' WHERE external_id IN ('late', 'later')`)
	var deleted int64
	if err := pool.QueryRow(context.Background(), `SELECT (webhooks.prune('30 days', '400 days') ->> 'events_deleted')::bigint`).Scan(&deleted); err != nil || deleted != 2 {
		t.Fatalf("prune deleted %d events (%v), want 2", deleted, err)
	}
	if v, _ := served(t, set, "pginbox_out_of_order_total", "stripe"); v != 1 {
		t.Fatalf("after prune: pginbox_out_of_order_total{provider=stripe} = %v, want still 1", v)
	}
	// A provider whose ordering is cleared keeps its count.
	pgtest.Exec(t, pool, `SELECT webhooks.clear_ordering('stripe')`)
	if v, ok := served(t, set, "pginbox_out_of_order_total", "stripe"); !ok || v != 1 {
		t.Fatalf("after clear_ordering: pginbox_out_of_order_total{provider=stripe} = %v (served %t), want 1", v, ok)
	}
}
