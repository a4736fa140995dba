package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The seeded history: processed events of four providers with their own
// key shapes (Stripe's "evt_" + 24 characters, GitHub's and Shopify's UUIDs
// with a body digest, as the receiver stores for unsigned keys, Sume's
// "evt_" + 24), random-looking (an md5 of the event's number), spread evenly
// over seedDays whole UTC days that end yesterday, ids in received_at order,
// payloads of ~800 bytes like the bench's other deliveries. Written set-based
// (INSERT … SELECT generate_series, one statement per day) on two
// connections — not through ingest_webhook(), whose per-call cost is not
// what these scenarios measure.

// seedDays is how many days of history the growth and retention scenarios
// keep: retention drops the oldest 60 (keep_payload 30 days).
const seedDays = 90

// seedRowsSQL is the SELECT of the seeded events numbered $1 … $2: $3 is the
// start of their day, $4 the seconds between two events of the day, $5 the
// id of event 0, $6 the payload's padding. Its columns are those of
// seedColumns.
const seedRowsSQL = `
SELECT $5::bigint + g, p.provider, p.key, p.event_type, 'processed',
       jsonb_build_object('event', p.event_type, 'job_id', p.key, 'status', 'COMPLETED', 'created_at', t.ts,
                          'data', jsonb_build_object('format', 'pdf', 'pages', 12,
                                                     'output_url', 'https://files.sume.example/out/' || p.key || '.pdf',
                                                     'meta', jsonb_build_object('attempt', 1, 'note', $6::text))),
       'webhook', t.ts, t.ts + interval '20 ms', t.ts + interval '5 ms', t.ts + interval '20 ms', 1,
       CASE WHEN p.digest THEN sha256(convert_to(p.key, 'UTF8')) END
FROM generate_series($1::bigint, $2::bigint) AS g
CROSS JOIN LATERAL (SELECT md5('pginbox-bench-' || g::text) AS h, (g % 4)::int AS k) AS r
CROSS JOIN LATERAL (
    SELECT (ARRAY['stripe', 'github', 'shopify', 'sume'])[r.k + 1] AS provider,
           CASE WHEN r.k IN (1, 2) THEN r.h::uuid::text ELSE 'evt_' || substr(r.h, 1, 24) END AS key,
           (ARRAY['invoice.paid', 'push', 'orders/create', 'job.completed'])[r.k + 1] AS event_type,
           r.k IN (1, 2) AS digest
) AS p
CROSS JOIN LATERAL (SELECT $3::timestamptz + ((g - $1)::float8 + 0.5) * $4::float8 * interval '1 second' AS ts) AS t`

const seedColumns = `id, provider, external_id, event_type, status, payload, source, received_at, updated_at, claimed_at, processed_at, attempts, body_sha256`

// seedDay is one day of seeded events: events lo … hi (inclusive).
type seedDay struct {
	day    time.Time
	lo, hi int64
}

// seedPlan spreads n events over days whole UTC days ending yesterday.
func seedPlan(now time.Time, n int64, days int) []seedDay {
	today := time.Date(now.UTC().Year(), now.UTC().Month(), now.UTC().Day(), 0, 0, 0, 0, time.UTC)
	var plan []seedDay
	var next int64
	for i := 0; i < days; i++ {
		count := n / int64(days)
		if int64(i) < n%int64(days) {
			count++
		}
		if count == 0 {
			continue
		}
		plan = append(plan, seedDay{day: today.AddDate(0, 0, i-days), lo: next, hi: next + count - 1})
		next += count
	}
	return plan
}

// seedInsert runs one statement per day of plan on two connections: stmt
// gets the day's $1 … $6 of seedRowsSQL.
func seedInsert(ctx context.Context, pool *pgxpool.Pool, plan []seedDay, base int64, stmt func(seedDay) string, log *slog.Logger) error {
	work := make(chan seedDay)
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	last := time.Now()
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				step := 86400 / float64(d.hi-d.lo+1)
				if _, err := pool.Exec(ctx, stmt(d), d.lo, d.hi, d.day, step, base, padding); err != nil {
					errc <- fmt.Errorf("seed %s: %w", d.day.Format(time.DateOnly), err)
					return
				}
				mu.Lock()
				done++
				if time.Since(last) > 15*time.Second {
					last = time.Now()
					log.Info("seeding history", "days", done, "of", len(plan))
				}
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for _, d := range plan {
		select {
		case work <- d:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errc)
	if err == nil {
		err = <-errc
	}
	return err
}

// seedHistory fills a storage-v2 database with n processed events over
// seedDays days: their day slices first (webhooks._history_slice), then per
// day one statement that writes the day's slice and returns its keys into
// webhooks.keys. The ids come from the queue's own sequence, which is moved
// past them. Then VACUUM (ANALYZE) and a CHECKPOINT, so the load's dirty
// pages are not written during the measurements.
func seedHistory(ctx context.Context, pool *pgxpool.Pool, n int64, log *slog.Logger) (time.Duration, error) {
	t0 := time.Now()
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return 0, err
	}
	plan := seedPlan(now, n, seedDays)
	for _, d := range plan {
		if _, err := pool.Exec(ctx, `SELECT webhooks._history_slice($1::date)`, d.day); err != nil {
			return 0, fmt.Errorf("history slice %s: %w", d.day.Format(time.DateOnly), err)
		}
	}
	if _, err := pool.Exec(ctx, `SELECT webhooks.ensure_history_days(7)`); err != nil {
		return 0, fmt.Errorf("ensure_history_days: %w", err)
	}
	var base int64
	if err := pool.QueryRow(ctx, `
		SELECT setval(s, nextval(s) + $1::bigint) - $1::bigint
		FROM pg_get_serial_sequence('webhooks.inbox', 'id') AS s`, n).Scan(&base); err != nil {
		return 0, fmt.Errorf("reserve ids: %w", err)
	}
	err := seedInsert(ctx, pool, plan, base, func(d seedDay) string {
		return `WITH h AS (
			INSERT INTO webhooks.` + sliceName(d.day) + ` (` + seedColumns + `)` + seedRowsSQL + `
			RETURNING provider, external_id, id, received_at, body_sha256)
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at, body_sha256)
		SELECT provider, external_id, id, received_at, body_sha256 FROM h`
	}, log)
	if err != nil {
		return 0, err
	}
	for _, q := range []string{`VACUUM (ANALYZE) webhooks.keys`, `VACUUM (ANALYZE) webhooks.history`, `CHECKPOINT`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	return time.Since(t0), nil
}

// seedEventsV02 fills a database still in the layout before storage v2
// (one table, webhooks.events) with the same n processed events, then
// VACUUM (ANALYZE) and a CHECKPOINT.
func seedEventsV02(ctx context.Context, pool *pgxpool.Pool, n int64, log *slog.Logger) (time.Duration, error) {
	t0 := time.Now()
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return 0, err
	}
	var base int64
	if err := pool.QueryRow(ctx, `
		SELECT setval(s, nextval(s) + $1::bigint) - $1::bigint
		FROM pg_get_serial_sequence('webhooks.events', 'id') AS s`, n).Scan(&base); err != nil {
		return 0, fmt.Errorf("reserve ids: %w", err)
	}
	err := seedInsert(ctx, pool, seedPlan(now, n, seedDays), base, func(seedDay) string {
		return `INSERT INTO webhooks.events (` + seedColumns + `) OVERRIDING SYSTEM VALUE` + seedRowsSQL
	}, log)
	if err != nil {
		return 0, err
	}
	for _, q := range []string{`VACUUM (ANALYZE) webhooks.events`, `CHECKPOINT`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	return time.Since(t0), nil
}

// sliceName is the name of the day slice of webhooks.history holding day.
func sliceName(day time.Time) string {
	return "history_" + day.UTC().Format("20060102")
}
