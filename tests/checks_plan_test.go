package tests

import (
	"context"
	"strings"
	"testing"
)

// TestTrafficLastHourPlan: traffic_last_hour's query, which runs five times
// per run_checks() (now and four weeks back), reads the hour it counts and a
// few index probes per provider, never the whole of webhooks.events. Its
// per-provider probes (the skip scan listing the providers, aliased k; the
// first event of each, aliased o) must stay index scans on a table whose
// statistics say most statuses are empty: written as EXISTS (... received_at
// < $1 - 1 hour), the first-event probe planned as a sequential scan of the
// table per provider and status (3.4 s per evaluation at 1,000,000 events).
func TestTrafficLastHourPlan(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	// 200,000 processed events of four providers over 35 days.
	execSQL(t, pool, `
		INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, received_at,
		                             updated_at, claimed_at, processed_at, attempts, run_after)
		SELECT (ARRAY['stripe', 'github', 'shopify', 'sume'])[1 + g % 4], 'evt_' || g, 'thing.happened',
		       'processed', '{}', x.at, x.at, x.at, x.at, 1, x.at
		FROM generate_series(1, 200000) AS g
		CROSS JOIN LATERAL (SELECT now() - interval '35 days' + interval '35 days' * (g::float8 / 200000) AS at) AS x`)
	execSQL(t, pool, `VACUUM (ANALYZE) webhooks.events`)
	query := queryString(t, pool, `SELECT query FROM webhooks.checks WHERE name = 'traffic_last_hour'`)
	for _, at := range []string{"now()", "now() - interval '28 days'"} {
		rows, err := pool.Query(ctx, `EXPLAIN `+strings.ReplaceAll(query, "$1", at))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		rows.Close()
		plan := strings.Join(lines, "\n")
		for _, alias := range []string{"k", "o", "e"} {
			if strings.Contains(plan, "Seq Scan on events "+alias+" ") || strings.Contains(plan, "Seq Scan on events "+alias+"_") {
				t.Fatalf("traffic_last_hour at %s scans webhooks.events (alias %s) sequentially:\n%s", at, alias, plan)
			}
		}
		for _, want := range []string{"events_status_provider_received_idx on events k", "events_status_provider_received_idx on events o"} {
			if !strings.Contains(plan, want) {
				t.Fatalf("traffic_last_hour at %s does not use %s:\n%s", at, want, plan)
			}
		}
		// The hour is read through an index on received_at: the BRIN index
		// (PostgreSQL 15) or a btree leading with it (the planner of 18
		// takes events_status_received_idx), never the whole table.
		if !strings.Contains(plan, "on events e") || !strings.Contains(plan, "Cond: ((received_at >= ") {
			t.Fatalf("traffic_last_hour at %s does not read the hour through an index on received_at:\n%s", at, plan)
		}
	}
}
