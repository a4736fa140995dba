package tests

import (
	"context"
	"crypto/md5"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/console"
)

// BenchmarkConsoleQueries loads PGINBOX_CONSOLE_ROWS events (default
// 5,000,000: four providers, twelve types, 30 days, 97% processed) and runs
// EXPLAIN (ANALYZE, BUFFERS) on every statement GET /api/events runs for
// each filter, reporting the execution time of each as a metric and the
// plans in the log. It then measures what a GIN index on payload would cost
// the ingest path. Run it with
//
//	go run ./tests/cmd/withpg -- go test ./tests -run '^$' -bench BenchmarkConsoleQueries -benchtime 1x -v
func BenchmarkConsoleQueries(b *testing.B) {
	rows := int64(5_000_000)
	if v := os.Getenv("PGINBOX_CONSOLE_ROWS"); v != "" {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	conf := NewConfig(b)
	pool := PoolFor(b, conf.URL(), 4)
	ctx := context.Background()
	t0 := time.Now()
	const chunk = 500_000
	for from := int64(1); from <= rows; from += chunk {
		execSQL(b, pool, `
			INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, source, received_at, updated_at,
			                             claimed_at, processed_at, attempts, last_error)
			SELECT (ARRAY['stripe', 'sume', 'github', 'shopify'])[1 + g % 4], 'evt_' || md5(g::text),
			       (ARRAY['invoice.paid', 'invoice.created', 'charge.succeeded', 'charge.failed', 'job.completed', 'job.failed',
			              'push', 'pull_request', 'orders/create', 'orders/paid', 'customer.created', 'customer.updated'])[1 + (g / 4) % 12],
			       s.st,
			       jsonb_build_object('object', 'event', 'customer', 'cus_' || (g % 50000), 'amount', g % 10000, 'n', g),
			       CASE WHEN g % 50 = 0 THEN 'backfill' ELSE 'webhook' END,
			       t.at, t.at,
			       CASE WHEN s.st <> 'pending' THEN t.at END,
			       CASE WHEN s.st = 'processed' THEN t.at + interval '1 second' END,
			       CASE WHEN s.st = 'pending' THEN 0 WHEN s.st = 'dead' THEN 25 ELSE 1 END,
			       CASE WHEN s.st = 'dead' THEN 'handler failed' END
			FROM generate_series($1::bigint, $2::bigint) AS g,
			     LATERAL (SELECT now() - interval '30 days' * (1 - g::float8 / $3) AS at) AS t,
			     LATERAL (SELECT CASE WHEN g % 200 = 7 THEN 'dead' WHEN g % 40 = 3 OR g > $3 - 2000 THEN 'pending' ELSE 'processed' END AS st) AS s`,
			from, min(from+chunk-1, rows), rows)
	}
	execSQL(b, pool, `VACUUM ANALYZE webhooks.inbox, webhooks.keys`)
	b.Logf("loaded %d events in %s", rows, time.Since(t0).Round(time.Second))
	var sample time.Time
	if err := pool.QueryRow(ctx, `SELECT received_at FROM webhooks.events WHERE id = $1`, rows/2).Scan(&sample); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		q    url.Values
	}{
		{"newest", url.Values{}},
		{"provider", url.Values{"provider": {"github"}}},
		{"status_dead", url.Values{"status": {"dead"}}},
		{"provider_status", url.Values{"provider": {"stripe"}, "status": {"dead"}}},
		{"event_type", url.Values{"provider": {"stripe"}, "event_type": {"charge.failed"}}},
		{"external_id", url.Values{"external_id": {"evt_" + md5hex(rows/3)}}},
		{"source_backfill", url.Values{"source": {"backfill"}}},
		{"time_window_hour", url.Values{"since": {sample.Add(-time.Hour).Format(time.RFC3339)}, "until": {sample.Format(time.RFC3339)}}},
		{"dead_since_day", url.Values{"status": {"dead"}, "since": {sample.Format(time.RFC3339)}}},
		{"time_window_day", url.Values{"since": {sample.Add(-24 * time.Hour).Format(time.RFC3339)}, "until": {sample.Format(time.RFC3339)}}},
		{"payload_24h", url.Values{"payload": {`{"customer": "cus_4242"}`}}},
		{"payload_7d", url.Values{"payload": {`{"customer": "cus_4242"}`}, "since": {time.Now().Add(-7*24*time.Hour + time.Minute).Format(time.RFC3339)}}},
		{"payload_1d_dead", url.Values{"payload": {`{"customer": "cus_4207"}`}, "status": {"dead"}, "since": {sample.Add(-24 * time.Hour).Format(time.RFC3339)}, "until": {sample.Format(time.RFC3339)}}},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tc := range cases {
			qs, err := console.ListSQL(tc.q)
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range qs {
				// Twice: the second run is the one reported (a warm cache,
				// as an operator paging through sees it).
				var plan string
				for run := 0; run < 2; run++ {
					plan = explainAnalyze(b, pool, q.SQL, q.Args)
				}
				ms := execTime(plan)
				b.ReportMetric(ms, tc.name+"/"+q.Name+"-ms")
				b.Logf("%s / %s: %.1f ms\n%s", tc.name, q.Name, ms, plan)
			}
		}
	}
	b.StopTimer()
	ginCost(b, conf.URL())
	listIndexCost(b)
}

// listIndexCost times ingest plus claim and complete of 20,000 events on
// two fresh databases, with and without the console's list indexes (the two
// full ones change on every status change, so they cost the ingest and the
// workers; the partial one of non-webhook rows gets no entry for a webhook),
// alternating rounds so that other load on the machine hits both alike.
func listIndexCost(b *testing.B) {
	pools := map[bool]*pgxpool.Pool{}
	for _, drop := range []bool{false, true} {
		conf := NewConfig(b)
		pools[drop] = PoolFor(b, conf.URL(), 2)
		if drop {
			execSQL(b, pools[drop], `DROP INDEX webhooks.events_status_received_idx`)
			execSQL(b, pools[drop], `DROP INDEX webhooks.events_status_provider_received_idx`)
			execSQL(b, pools[drop], `DROP INDEX webhooks.events_other_source_status_received_idx`)
		}
	}
	for _, p := range pools {
		execSQL(b, p, `SELECT count(*) FROM generate_series(1, 20000) AS g,
			LATERAL webhooks.ingest_webhook('stripe', 'seed_' || g, 'invoice.paid', jsonb_build_object('n', g)) AS i`)
		execSQL(b, p, `SELECT count(webhooks.complete(c.id, 'w', c.attempts)) FROM webhooks.claim('w', 10000) AS c`)
		execSQL(b, p, `SELECT count(webhooks.complete(c.id, 'w', c.attempts)) FROM webhooks.claim('w', 10000) AS c`)
		execSQL(b, p, `VACUUM ANALYZE webhooks.inbox, webhooks.keys`)
	}
	best := map[bool]float64{}
	for round := 0; round < 6; round++ {
		for _, drop := range []bool{round%2 == 0, round%2 != 0} {
			t0 := time.Now()
			for batch := 0; batch < 50; batch++ {
				execSQL(b, pools[drop], `SELECT count(*) FROM generate_series(1, 200) AS g,
					LATERAL webhooks.ingest_webhook('stripe', $1 || g, 'invoice.paid', jsonb_build_object('n', g)) AS i`,
					fmt.Sprintf("r%d_b%d_", round, batch))
				execSQL(b, pools[drop], `SELECT count(webhooks.complete(c.id, 'w', c.attempts)) FROM webhooks.claim('w', 200) AS c`)
			}
			best[drop] = max(best[drop], 10000/time.Since(t0).Seconds())
		}
	}
	for _, drop := range []bool{false, true} {
		b.ReportMetric(best[drop], fmt.Sprintf("ingest-claim-complete-per-s-without-list-indexes-%v", drop))
		b.Logf("ingest + claim + complete, console list indexes dropped %v: %.0f events/s (best of 6 × 10,000, alternating)", drop, best[drop])
	}
}

func md5hex(n int64) string {
	return fmt.Sprintf("%x", md5.Sum([]byte(strconv.FormatInt(n, 10))))
}

func explainAnalyze(b *testing.B, pool *pgxpool.Pool, sql string, args []any) string {
	rows, err := pool.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		b.Fatalf("explain: %v\n%s", err, sql)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

var execRE = regexp.MustCompile(`Execution Time: ([0-9.]+) ms`)

func execTime(plan string) float64 {
	m := execRE.FindStringSubmatch(plan)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// ginCost times 20,000 ingest_webhook calls (in one statement, 200 per
// transaction) on a fresh database, without and with a GIN
// (jsonb_path_ops) index on payload.
func ginCost(b *testing.B, _ string) {
	for _, gin := range []bool{false, true} {
		conf := NewConfig(b)
		pool := PoolFor(b, conf.URL(), 2)
		if gin {
			execSQL(b, pool, `CREATE INDEX events_payload_gin ON webhooks.events USING gin (payload jsonb_path_ops)`)
		}
		var best float64
		for round := 0; round < 3; round++ {
			t0 := time.Now()
			for batch := 0; batch < 100; batch++ {
				execSQL(b, pool, `SELECT count(*) FROM generate_series(1, 200) AS g,
					LATERAL webhooks.ingest_webhook('stripe', $1 || g, 'invoice.paid',
						jsonb_build_object('customer', 'cus_' || g, 'amount', g, 'lines', jsonb_build_array(jsonb_build_object('sku', 'pro', 'qty', g)))) AS i`,
					fmt.Sprintf("r%d_b%d_", round, batch))
			}
			best = max(best, 20000/time.Since(t0).Seconds())
		}
		b.ReportMetric(best, fmt.Sprintf("ingest-per-s-gin-%v", gin))
		b.Logf("ingest_webhook, GIN index on payload %v: %.0f events/s (best of 3 × 20,000)", gin, best)
	}
}
