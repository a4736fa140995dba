package pgtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SeedHistoryDays gives webhooks.history the day slices of today and the
// days before it (UTC) and fills each with perDay processed events spread
// over the day (today's up to now), written straight into the slices with
// their keys, as move_history() leaves them: providers stripe, github and
// shopify in turn, every tenth a Sume job.completed (a payload job_id of
// its own), every fiftieth from source 'backfill'. Ids follow received_at.
// It then analyses history, the way a layout with days of history is
// planned. A plan test reads them with [HistoryReads].
func SeedHistoryDays(t testing.TB, pool *pgxpool.Pool, days, perDay int) {
	t.Helper()
	Exec(t, pool, `SELECT webhooks._history_slice((now() AT TIME ZONE 'UTC')::date - g) FROM generate_series(0, $1::int) AS g`, days)
	Exec(t, pool, `
		WITH moved AS (
			INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, source, received_at,
			                              updated_at, claimed_at, processed_at, attempts, run_after)
			SELECT nextval('webhooks.events_id_seq'), r.provider, r.external_id, r.event_type, 'processed', r.payload,
			       r.source, r.at, r.at, r.at, r.at + interval '1 second', 1, r.at
			FROM (
				SELECT CASE WHEN i % 10 = 3 THEN 'sume' ELSE (ARRAY['stripe', 'github', 'shopify'])[1 + i % 3] END AS provider,
				       format('hist_%s_%s', d.day, i) AS external_id,
				       CASE WHEN i % 10 = 3 THEN 'job.completed' ELSE 'thing.happened' END AS event_type,
				       CASE WHEN i % 10 = 3 THEN jsonb_build_object('job_id', format('job_%s_%s', d.day, i), 'status', 'COMPLETED')
				            ELSE jsonb_build_object('n', i) END AS payload,
				       CASE WHEN i % 50 = 7 THEN 'backfill' ELSE 'webhook' END AS source,
				       d.start + least(interval '1 day', now() - d.start) * ((i - 0.5) / $2::int) AS at
				FROM generate_series($1::int, 0, -1) AS k
				CROSS JOIN LATERAL (SELECT (now() AT TIME ZONE 'UTC')::date - k AS day) AS x
				CROSS JOIN LATERAL (SELECT x.day, x.day::timestamp AT TIME ZONE 'UTC' AS start) AS d
				CROSS JOIN generate_series(1, $2::int) AS i
				ORDER BY 6
			) AS r
			RETURNING provider, external_id, id, received_at
		)
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at)
		SELECT m.provider, m.external_id, m.id, m.received_at FROM moved AS m`, days, perDay)
	Exec(t, pool, `ANALYZE webhooks.history, webhooks.keys, webhooks.inbox`)
}

// PlanNode is a node of an EXPLAIN (FORMAT JSON) plan, with or without
// ANALYZE.
type PlanNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	ActualLoops  *float64   `json:"Actual Loops"`
	Plans        []PlanNode `json:"Plans"`
}

// Walk calls f on n and every node below it.
func (n PlanNode) Walk(f func(PlanNode)) {
	f(n)
	for _, k := range n.Plans {
		k.Walk(f)
	}
}

// ParsePlan reads the plan of EXPLAIN (FORMAT JSON) output, or of an
// auto_explain message in JSON format (its text from the first brace).
func ParsePlan(t testing.TB, raw string) PlanNode {
	t.Helper()
	if i := strings.IndexAny(raw, "[{"); i > 0 {
		raw = raw[i:]
	}
	var one struct{ Plan PlanNode }
	if strings.HasPrefix(raw, "[") {
		var many []struct{ Plan PlanNode }
		if err := json.Unmarshal([]byte(raw), &many); err != nil || len(many) != 1 {
			t.Fatalf("plan: %v\n%s", err, raw)
		}
		one = many[0]
	} else if err := json.Unmarshal([]byte(raw), &one); err != nil {
		t.Fatalf("plan: %v\n%s", err, raw)
	}
	return one.Plan
}

// HistoryReads returns the days (UTC) of the slices of webhooks.history
// that plan reads: with ANALYZE, the scans that ran at least once (a slice
// pruned while the plan ran shows "never executed"); without, the scans the
// plan holds after the pruning done when it was planned and when it started.
// seq lists the relations the plan reads with a sequential scan.
func HistoryReads(t testing.TB, plan PlanNode) (days map[time.Time]bool, seq []string) {
	t.Helper()
	days = map[time.Time]bool{}
	plan.Walk(func(n PlanNode) {
		if n.RelationName == "" || (n.ActualLoops != nil && *n.ActualLoops == 0) {
			return
		}
		if n.NodeType == "Seq Scan" {
			seq = append(seq, n.RelationName)
		}
		if day, ok := strings.CutPrefix(n.RelationName, "history_"); ok {
			d, err := time.Parse("20060102", day)
			if err != nil {
				t.Fatalf("a relation named like a day slice: %s", n.RelationName)
			}
			days[d] = true
		}
	})
	return days, seq
}

// HistoryDaysLocked returns the days (UTC) of the slices of webhooks.history
// that the current transaction of q holds a lock on: the slices the planner
// opened, which are all those it could not leave out while planning,
// whatever the executor then prunes.
func HistoryDaysLocked(t testing.TB, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) map[time.Time]bool {
	t.Helper()
	var names []string
	if err := q.QueryRow(context.Background(), `
		SELECT coalesce(array_agg(c.relname::text), '{}')
		FROM pg_catalog.pg_locks AS l
		JOIN pg_catalog.pg_class AS c ON c.oid = l.relation
		WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relkind = 'r'
		  AND c.relnamespace = 'webhooks'::regnamespace AND c.relname ~ '^history_[0-9]{8}$'`).Scan(&names); err != nil {
		t.Fatalf("locks: %v", err)
	}
	days := map[time.Time]bool{}
	for _, n := range names {
		d, err := time.Parse("20060102", strings.TrimPrefix(n, "history_"))
		if err != nil {
			t.Fatalf("a relation named like a day slice: %s", n)
		}
		days[d] = true
	}
	return days
}
