package status_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/status"
)

// explainedConn opens a superuser connection to the test database of conf
// whose statements auto_explain logs to it (ANALYZE, JSON); the function
// returned gives the plans logged so far.
func explainedConn(t *testing.T, db string) (*pgx.Conn, func() []pgtest.PlanNode) {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.SuperuserURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notes []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notes = append(notes, n.Message)
		mu.Unlock()
	}
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_format = json`, `SET client_min_messages = log`} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return c, func() []pgtest.PlanNode {
		mu.Lock()
		defer mu.Unlock()
		var plans []pgtest.PlanNode
		for _, n := range notes {
			if strings.Contains(n, `"Plan"`) {
				plans = append(plans, pgtest.ParsePlan(t, n))
			}
		}
		notes = nil
		return plans
	}
}

// TestMetricsReadsLeaveHistoryAlone: what /metrics reads from the database
// on each scrape stays off the days of history. The queue's depth and age
// (ReadQueue) name each status other than processed as a literal, so the
// planner leaves history out and reads the queue alone; the out-of-order
// counts (ReadOrderCounts) read each day slice only through its partial
// index of events processed out of order, never a slice's rows. The plans
// are the statements' own, as auto_explain logs them, over ten days of
// history (5,000 events a day, one in 97 out of order).
func TestMetricsReadsLeaveHistoryAlone(t *testing.T) {
	t.Parallel()
	conf := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, conf.URL(), 2)
	pgtest.SeedHistoryDays(t, pool, 10, 5000)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('p', 'e' || g, 't', '{}') FROM generate_series(1, 20) AS g`)
	pgtest.Exec(t, pool, `UPDATE webhooks.history SET out_of_order = true WHERE id % 97 = 0`)
	pgtest.Exec(t, pool, `VACUUM (ANALYZE) webhooks.history, webhooks.inbox`)
	c, plans := explainedConn(t, conf.Database)
	ctx := context.Background()

	q, err := status.ReadQueue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if q.Pending != 20 {
		t.Fatalf("pending %d, want 20", q.Pending)
	}
	read := plans()
	if len(read) == 0 {
		t.Fatal("auto_explain logged no plan of ReadQueue")
	}
	for _, p := range read {
		if days, _ := pgtest.HistoryReads(t, p); len(days) > 0 {
			t.Errorf("ReadQueue reads history: %v", days)
		}
	}

	counts, err := status.ReadOrderCounts(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var flagged int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.history WHERE out_of_order`).Scan(&flagged); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range counts.OutOfOrder {
		total += n
	}
	if flagged == 0 || total != flagged {
		t.Fatalf("out of order %v (%d), want the %d flagged", counts.OutOfOrder, total, flagged)
	}
	today := time.Now().UTC().Format("20060102")
	for _, p := range plans() {
		p.Walk(func(n pgtest.PlanNode) {
			day, ok := strings.CutPrefix(n.RelationName, "history_")
			if !ok || day > today || (n.ActualLoops != nil && *n.ActualLoops == 0) {
				return
			}
			if n.IndexName != "history_"+day+"_provider_idx" {
				t.Errorf("ReadOrderCounts reads %s by %s %s, want its partial index of events out of order", n.RelationName, n.NodeType, n.IndexName)
			}
		})
	}
}
