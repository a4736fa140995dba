package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func resultOf(res []checkResult, name string) (checkResult, bool) {
	for _, r := range res {
		if r.Name == name {
			return r, true
		}
	}
	return checkResult{}, false
}

// setMaxOK tunes a threshold with the plain UPDATE the docs describe.
func setMaxOK(t testing.TB, pool *pgxpool.Pool, name string, maxOK float64) {
	t.Helper()
	execSQL(t, pool, `UPDATE webhooks.checks SET max_ok = $2 WHERE name = $1`, name, maxOK)
}

// holdSnapshot opens a REPEATABLE READ transaction that keeps its snapshot
// (and so vacuum's xmin horizon) until t ends.
func holdSnapshot(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	conn := holdConn(t, pool)
	if _, err := conn.Exec(context.Background(), `BEGIN ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT count(*) FROM webhooks.events`); err != nil {
		t.Fatal(err)
	}
}

// anomaly seeds the anomaly one check exists to catch.
type anomaly struct {
	check string
	// seed runs before the views are refreshed; tamper (optional) after.
	seed   func(t *testing.T, pool *pgxpool.Pool)
	tamper func(t *testing.T, pool *pgxpool.Pool)
	// noReconcilePass: do not record a healthy reconciliation pass.
	noReconcilePass bool
}

// anomalies has one case per check in webhooks.checks; TestEveryCheckFires
// fails for a check without one.
var anomalies = []anomaly{
	// latency
	{check: "received_to_processed_p50_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 20)
		execSQL(t, p, `UPDATE webhooks.events SET received_at = received_at - interval '10 minutes'`)
	}},
	{check: "received_to_processed_p99_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 100)
		execSQL(t, p, `UPDATE webhooks.events SET received_at = received_at - interval '30 minutes' WHERE id % 20 = 0`)
	}},
	{check: "claimed_to_processed_p99_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 20)
		execSQL(t, p, `UPDATE webhooks.events
			SET received_at = received_at - interval '10 minutes', claimed_at = claimed_at - interval '10 minutes'
			WHERE id = (SELECT min(id) FROM webhooks.events)`)
	}},
	{check: "oldest_pending_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "done", 10)
		ingest(t, p, "acme", "waiting", "thing.happened", `{}`)
		backdate(t, p, "15 minutes", `external_id = 'waiting'`)
	}},
	{check: "oldest_expired_lease_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingest(t, p, "acme", "e1", "thing.happened", `{}`)
		claim(t, p, "crashed-worker", 1, "1 minute")
		execSQL(t, p, `UPDATE webhooks.events SET locked_until = now() - interval '10 minutes'`)
	}},
	{check: "last_completion_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "e", "thing.happened", 3, "", "")
		backdate(t, p, "400 seconds", "true")
	}},
	{check: "reconcile_age_seconds", noReconcilePass: true, seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 5)
		execSQL(t, p, `INSERT INTO webhooks.reconcile_runs (started_at, finished_at, trigger)
			VALUES (now() - interval '20 minutes', now() - interval '20 minutes', 'test')`)
	}},
	{check: "refresh_age_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 5)
	}, tamper: func(t *testing.T, p *pgxpool.Pool) {
		// No view has seen anything since an event of 400 s ago.
		execSQL(t, p, `UPDATE webhooks.view_refreshes SET events_high_water = 0`)
		execSQL(t, p, `UPDATE webhooks.events SET received_at = now() - interval '400 seconds'
			WHERE id = (SELECT min(id) FROM webhooks.events)`)
	}},

	// referential
	{check: "gaps_recent", seed: func(t *testing.T, p *pgxpool.Pool) {
		execSQL(t, p, `INSERT INTO webhooks.expectations (provider, external_id, deadline)
			VALUES ('sume', 'job_late', now() - interval '10 minutes')`)
	}},
	{check: "gaps_over_1h", seed: func(t *testing.T, p *pgxpool.Pool) {
		execSQL(t, p, `INSERT INTO webhooks.expectations (provider, external_id, deadline)
			VALUES ('sume', 'job_lost', now() - interval '2 hours')`)
	}},
	{check: "backfill_checkpoint_age_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		// Stripe's log was last read completely two hours ago; a recovery from
		// it (no expectation) does not count as an unexpected backfill.
		execSQL(t, p, `INSERT INTO webhooks.backfill_checkpoints (provider, read_until) VALUES ('stripe', now() - interval '2 hours')`)
		traffic(t, p, "stripe", "evt_", 40)
		ingestMany(t, p, "stripe", "evt_b_", "invoice.paid", 1, "", "backfill")
		processAll(t, p, "w")
	}},
	{check: "backfills_without_expectation", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "sume", "job_", "job.completed", 1, "", "backfill")
		processAll(t, p, "w")
	}},
	{check: "tombstones_with_event", seed: func(t *testing.T, p *pgxpool.Pool) {
		execSQL(t, p, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES ('sume', 'job_1', 'status API: 404')`)
		ingest(t, p, "sume", "job_1", "job.completed", `{"job_id": "job_1"}`)
		processAll(t, p, "w")
	}},
	{check: "dead_events_24h", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingest(t, p, "acme", "poison", "thing.happened", `{}`)
		execSQL(t, p, `UPDATE webhooks.events SET max_attempts = 1`)
		c := claim(t, p, "w", 1, "1 minute")
		if got := queryInt(t, p, `SELECT count(*) FROM webhooks.fail($1, 'w', $2, 'boom') AS s WHERE s = 'dead'`, c[0].ID, c[0].Attempts); got != 1 {
			t.Fatal("event did not die")
		}
	}},
	{check: "exhausted_pending_events", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingest(t, p, "acme", "stuck", "thing.happened", `{}`)
		execSQL(t, p, `UPDATE webhooks.events SET attempts = 3, max_attempts = 3`)
	}},

	// volume
	{check: "providers_silent", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "quiet", "e", 300)
		spreadOver(t, p, "quiet", "1 hour", "5 hours")
	}},
	{check: "provider_spike_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "bursty", "base", 60)
		spreadOver(t, p, "bursty", "1 hour", "5 hours")
		traffic(t, p, "bursty", "burst", 150)
	}},
	{check: "redelivery_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "e", "thing.happened", 30, `jsonb_build_object('v', 1)`, "")
		for i := 1; i <= 15; i++ {
			if _, outcome := ingest(t, p, "acme", fmt.Sprintf("e%d", i), "thing.happened", `{"v": 2}`); outcome != "updated" {
				t.Fatalf("redelivery: %s, want updated", outcome)
			}
		}
		processAll(t, p, "w")
	}},
	{check: "backfill_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		// Backfills that answer expectations: only the ratio is wrong.
		execSQL(t, p, `INSERT INTO webhooks.expectations (provider, external_id, deadline)
			SELECT 'sume', 'bf' || g, now() + interval '1 hour' FROM generate_series(1, 10) AS g`)
		ingestMany(t, p, "sume", "bf", "job.completed", 10, "", "backfill")
		ingestMany(t, p, "sume", "wh", "job.completed", 20, "", "")
		processAll(t, p, "w")
	}},
	{check: "retry_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "e", "thing.happened", 30, "", "")
		for _, c := range claim(t, p, "w", 10, "1 minute") {
			execSQL(t, p, `SELECT webhooks.fail($1, 'w', $2, 'timeout')`, c.ID, c.Attempts)
		}
		execSQL(t, p, `UPDATE webhooks.events SET run_after = now() WHERE status = 'pending'`)
		processAll(t, p, "w")
	}},
	{check: "queue_depth", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "e", "thing.happened", 10001, "", "")
	}},
	{check: "tombstone_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		execSQL(t, p, `INSERT INTO webhooks.tombstones (provider, external_id, reason)
			SELECT 'sume', 'gone' || g, 'status API: 404' FROM generate_series(1, 10) AS g`)
		traffic(t, p, "sume", "job_", 20)
	}},

	{check: "traffic_last_hour", seed: func(t *testing.T, p *pgxpool.Pool) {
		// Four weeks of a Monday-morning peak of about 300, then a third.
		weeklyPeaks(t, p, 4)
		seedEvenly(t, p, "now_", 92, "1 hour", "0 seconds")
	}},

	// payload
	{check: "new_event_types", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "stripe", "old", "invoice.paid", 5, "", "")
		processAll(t, p, "w")
		backdate(t, p, "2 days", "true")
		ingest(t, p, "stripe", "new1", "invoice.refunded", `{}`)
		processAll(t, p, "w")
	}},
	{check: "sume_failed_without_error", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingest(t, p, "sume", "job_1", "job.failed", `{"event": "job.failed", "job_id": "job_1", "status": "ERROR"}`)
		processAll(t, p, "w")
	}},
	{check: "payload_clock_ahead_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "e", "thing.happened", 12,
			`jsonb_build_object('created_at', to_char(now() AT TIME ZONE 'UTC' + interval '10 minutes', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))`, "")
		processAll(t, p, "w")
	}},
	{check: "delivery_delay_p99_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "stripe", "evt_", "invoice.paid", 12,
			`jsonb_build_object('created', floor(extract(epoch FROM now() - interval '2 hours')))`, "")
		processAll(t, p, "w")
	}},
	{check: "payload_max_bytes", seed: func(t *testing.T, p *pgxpool.Pool) {
		ingestMany(t, p, "acme", "big", "thing.happened", 1,
			`jsonb_build_object('blob', (SELECT string_agg(md5(x::text), '') FROM generate_series(1, 25000) AS x))`, "")
		processAll(t, p, "w")
	}},

	// database
	{check: "events_dead_tuple_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		// A held snapshot keeps vacuum from removing what the updates leave.
		holdSnapshot(t, p)
		ingestMany(t, p, "acme", "e", "thing.happened", 6000, "", "")
		execSQL(t, p, `UPDATE webhooks.events SET updated_at = now()`)
		execSQL(t, p, `UPDATE webhooks.events SET updated_at = now()`)
	}},
	{check: "xmin_holder_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		setMaxOK(t, p, "xmin_holder_seconds", 1) // 10 minutes by default
		holdSnapshot(t, p)
		time.Sleep(1500 * time.Millisecond)
	}},
	{check: "xmin_horizon_xid_age", seed: func(t *testing.T, p *pgxpool.Pool) {
		setMaxOK(t, p, "xmin_horizon_xid_age", 100) // 10 million by default
		holdSnapshot(t, p)
		for i := 0; i < 150; i++ {
			execSQL(t, p, `SELECT pg_current_xact_id()`)
		}
	}},
	{check: "notify_queue_usage", seed: func(t *testing.T, p *pgxpool.Pool) {
		// A listener idle in a transaction stops the queue from draining:
		// real, but a quarter of 8 GB is out of reach in a test.
		setMaxOK(t, p, "notify_queue_usage", 0)
		l := holdConn(t, p)
		for _, q := range []string{`LISTEN pginbox_test_stuck`, `BEGIN`, `SELECT 1`} {
			if _, err := l.Exec(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 6; i++ {
			execSQL(t, p, `SELECT pg_notify('pginbox_test_stuck', $1 || repeat(md5($1), 220))`, fmt.Sprint(i))
		}
	}},
	{check: "events_id_used_ratio", seed: func(t *testing.T, p *pgxpool.Pool) {
		// The ids' sequence belongs to the queue, webhooks.inbox (the view
		// webhooks.events has none of its own).
		execSQL(t, p, `SELECT setval(pg_get_serial_sequence('webhooks.inbox', 'id'), 6000000000000000000)`)
		traffic(t, p, "acme", "e", 1)
	}},
	{check: "view_staleness_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		traffic(t, p, "acme", "e", 5)
	}, tamper: func(t *testing.T, p *pgxpool.Pool) {
		// One view has missed an event of 700 s ago; the others are fresh.
		execSQL(t, p, `UPDATE webhooks.view_refreshes SET events_high_water = 0 WHERE view_name = 'traffic_5m'`)
		execSQL(t, p, `UPDATE webhooks.events SET received_at = now() - interval '700 seconds'
			WHERE id = (SELECT min(id) FROM webhooks.events)`)
	}},
	{check: "view_refresh_seconds", tamper: func(t *testing.T, p *pgxpool.Pool) {
		execSQL(t, p, `UPDATE webhooks.view_refreshes SET duration_ms = 120000 WHERE view_name = 'traffic_5m'`)
	}},
	{check: "lock_wait_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		setMaxOK(t, p, "lock_wait_seconds", 1) // 30 s by default
		ingest(t, p, "acme", "e1", "thing.happened", `{"v": 1}`)
		holder := holdConn(t, p)
		ctx := context.Background()
		if _, err := holder.Exec(ctx, `BEGIN`); err != nil {
			t.Fatal(err)
		}
		// The queue's row: FOR UPDATE through the view webhooks.events
		// (a UNION ALL) locks no row.
		if _, err := holder.Exec(ctx, `SELECT id FROM webhooks.inbox FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		// A redelivery that must reconcile the payload waits on the row lock.
		waiter := holdConn(t, p)
		done := make(chan error, 1)
		go func() {
			_, err := waiter.Exec(ctx, `SELECT * FROM webhooks.ingest_webhook('acme', 'e1', 'thing.happened', '{"v": 2}')`)
			done <- err
		}()
		t.Cleanup(func() {
			_, _ = holder.Exec(ctx, `ROLLBACK`)
			if err := <-done; err != nil {
				t.Errorf("waiting ingest: %v", err)
			}
		})
		time.Sleep(1500 * time.Millisecond)
	}},

	{check: "sequence_blocked_seconds", seed: func(t *testing.T, p *pgxpool.Pool) {
		// The head of customer cus_1 failed an hour ago and is retried in
		// place; the customer's next event waits behind it.
		execSQL(t, p, `SELECT webhooks.set_ordering('acme', '$.customer', '$.n')`)
		ingest(t, p, "acme", "first", "customer.updated", `{"customer": "cus_1", "n": 1}`)
		ingest(t, p, "acme", "second", "customer.updated", `{"customer": "cus_1", "n": 2}`)
		head := queryInt(t, p, `SELECT id FROM webhooks.events WHERE external_id = 'first'`)
		c := claim(t, p, "w", 10, "1 minute")
		if len(c) != 1 || c[0].ID != head {
			t.Fatalf("claimed %v, want the head (%d) alone", c, head)
		}
		if got := queryInt(t, p, `SELECT count(*) FROM webhooks.fail($1, 'w', $2, 'boom') AS s WHERE s = 'pending'`, c[0].ID, c[0].Attempts); got != 1 {
			t.Fatal("the head is not pending again")
		}
		execSQL(t, p, `UPDATE webhooks.event_errors SET at = now() - interval '1 hour'`)
		// The held event has waited as long: it is not claimable, so the
		// queue's latency checks (oldest_pending_seconds,
		// last_completion_seconds) must not count it.
		execSQL(t, p, `UPDATE webhooks.events SET received_at = now() - interval '1 hour', run_after = now() - interval '1 hour'
			WHERE external_id = 'second'`)
	}},
}

// spreadOver spreads provider's events evenly between from and to ago (e.g.
// "1 hour", "5 hours"), keeping each event's claim and completion 1 s after
// its receipt.
func spreadOver(t testing.TB, pool *pgxpool.Pool, provider, from, to string) {
	t.Helper()
	execSQL(t, pool, `
		WITH s AS (
			SELECT id, now() - $2::interval
			           - ($3::interval - $2::interval) * (row_number() OVER (ORDER BY id))::float8
			             / count(*) OVER () AS at
			FROM webhooks.events WHERE provider = $1
		)
		UPDATE webhooks.events AS e
		SET received_at = s.at, run_after = s.at, updated_at = s.at + interval '1 second',
		    claimed_at = s.at + interval '1 second', processed_at = s.at + interval '1 second'
		FROM s WHERE e.id = s.id`, provider, from, to)
}

// TestEveryCheckFires seeds, for every check, the anomaly it exists to catch
// and requires that exactly that check breaches.
func TestEveryCheckFires(t *testing.T) {
	t.Parallel()

	t.Run("every check has a case", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 2)
		rows, err := pool.Query(context.Background(), `SELECT name FROM webhooks.checks ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		cases := map[string]bool{}
		for _, a := range anomalies {
			if cases[a.check] {
				t.Errorf("two cases for %s", a.check)
			}
			cases[a.check] = true
		}
		for _, n := range names {
			if !cases[n] {
				t.Errorf("check %s has no anomaly case in TestEveryCheckFires", n)
			}
			delete(cases, n)
		}
		for n := range cases {
			t.Errorf("case %s matches no row of webhooks.checks", n)
		}
		if len(names) < 32 {
			t.Errorf("only %d checks, want at least 32", len(names))
		}
	})

	for _, a := range anomalies {
		t.Run(a.check, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 4)
			if a.seed != nil {
				a.seed(t, pool)
			}
			if !a.noReconcilePass {
				reconcilePass(t, pool)
			}
			refreshViews(t, pool)
			if a.tamper != nil {
				a.tamper(t, pool)
			}
			// Statistics reach pg_stat_user_tables up to a few seconds late:
			// poll until the check fires, then require it alone.
			deadline := time.Now().Add(30 * time.Second)
			var got []string
			var detail string
			for {
				got, detail = breaches(runChecks(t, pool))
				if slices.Contains(got, a.check) || time.Now().After(deadline) {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if !slices.Equal(got, []string{a.check}) {
				t.Fatalf("breached %v (%s), want exactly [%s]", got, detail, a.check)
			}
			t.Logf("%s", detail)
		})
	}
}

// TestChecksHealthySystem drives normal traffic through two providers and
// requires that no check breaches, also on an empty database and on one
// whose views were never refreshed and which never ran a reconciliation.
func TestChecksHealthySystem(t *testing.T) {
	t.Parallel()

	t.Run("empty database", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 4)
		if got, detail := breaches(runChecks(t, pool)); len(got) > 0 {
			t.Fatalf("never refreshed: breached %s", detail)
		}
		refreshViews(t, pool)
		res := runChecks(t, pool)
		if got, detail := breaches(res); len(got) > 0 {
			t.Fatalf("refreshed: breached %s", detail)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE enabled`); int64(len(res)) != n || n < 32 {
			t.Fatalf("run_checks returned %d rows for %d enabled checks (want at least 32)", len(res), n)
		}
	})

	t.Run("normal traffic", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 8)
		healthyTraffic(t, pool)

		if _, err := pool.Exec(context.Background(), `SELECT * FROM webhooks.rescue_leases()`); err != nil {
			t.Fatal(err)
		}
		if queryInt(t, pool, `SELECT count(*) FROM pg_proc WHERE oid = to_regproc('webhooks.reconcile')`) == 1 {
			execSQL(t, pool, `SELECT webhooks.reconcile()`)
		}
		refreshViews(t, pool)
		res := runChecks(t, pool)
		if got, detail := breaches(res); len(got) > 0 {
			t.Fatalf("healthy traffic: breached %s", detail)
		}
		// Not healthy by having seen nothing: the views did see the traffic.
		for _, name := range []string{"received_to_processed_p50_seconds", "received_to_processed_p99_seconds",
			"claimed_to_processed_p99_seconds", "redelivery_ratio", "payload_clock_ahead_seconds",
			"delivery_delay_p99_seconds", "payload_max_bytes", "events_id_used_ratio"} {
			r, ok := resultOf(res, name)
			if !ok || r.Value == nil {
				t.Errorf("%s: no value after healthy traffic (%v)", name, r)
			}
		}
		if r, _ := resultOf(res, "redelivery_ratio"); r.Value == nil || *r.Value <= 0 {
			t.Errorf("redelivery_ratio = %v, want > 0 after an updated redelivery", r)
		}
		t.Logf("%d checks ok; e.g. %v", len(res), res[:3])
	})

	t.Run("traffic, never refreshed or reconciled", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 8)
		healthyTraffic(t, pool)
		if got, detail := breaches(runChecks(t, pool)); len(got) > 0 {
			t.Fatalf("breached %s", detail)
		}
	})
}

// healthyTraffic delivers a few hundred events of two providers, one at a
// time the way the receiver does, with duplicates, one payload-changing
// redelivery, met expectations and a tombstone, and processes them all.
func healthyTraffic(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	now := time.Now().UTC()
	execSQL(t, pool, `INSERT INTO webhooks.expectations (provider, external_id, deadline)
		SELECT 'sume', 'job_' || g, now() + interval '1 hour' FROM generate_series(1, 20) AS g`)
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES ('sume', 'job_never', 'status API: 404')`)
	outcomes := map[string]int{}
	for i := 1; i <= 150; i++ {
		typ, body := "job.completed", fmt.Sprintf(`{"event": "job.completed", "job_id": "job_%d", "status": "COMPLETED", "created_at": %q}`, i, now.Format(time.RFC3339))
		if i%10 == 0 {
			typ, body = "job.failed", fmt.Sprintf(`{"event": "job.failed", "job_id": "job_%d", "status": "ERROR", "error": {"code": "oom"}, "created_at": %q}`, i, now.Format(time.RFC3339))
		}
		_, o := ingest(t, pool, "sume", fmt.Sprintf("job_%d", i), typ, body)
		outcomes[o]++
		_, o = ingest(t, pool, "stripe", fmt.Sprintf("evt_%d", i), "invoice.paid",
			fmt.Sprintf(`{"id": "evt_%d", "type": "invoice.paid", "created": %d}`, i, now.Unix()))
		outcomes[o]++
		if i%15 == 0 { // the provider retries a delivery we already have
			_, o = ingest(t, pool, "stripe", fmt.Sprintf("evt_%d", i), "invoice.paid",
				fmt.Sprintf(`{"id": "evt_%d", "type": "invoice.paid", "created": %d}`, i, now.Unix()))
			outcomes[o]++
		}
	}
	// A redelivery that changes a pending event's payload.
	_, o := ingest(t, pool, "sume", "job_1", "job.completed",
		fmt.Sprintf(`{"event": "job.completed", "job_id": "job_1", "status": "COMPLETED", "attempt": 2, "created_at": %q}`, now.Format(time.RFC3339)))
	outcomes[o]++
	if outcomes["created"] != 300 || outcomes["duplicate"] != 10 || outcomes["updated"] != 1 {
		t.Fatalf("outcomes %v, want 300 created, 10 duplicate, 1 updated", outcomes)
	}
	if n := processAll(t, pool, "worker-1"); n != 300 {
		t.Fatalf("processed %d events, want 300", n)
	}
	// Late duplicates of processed events change nothing.
	for i := 1; i <= 5; i++ {
		if _, o := ingest(t, pool, "sume", fmt.Sprintf("job_%d", i), "job.completed", `{"late": true}`); o != "duplicate" {
			t.Fatalf("late redelivery: %s", o)
		}
	}
}

// TestRunChecksNotifies: a breach sends NOTIFY webhooks_reconcile (at commit,
// naming the breached checks); a healthy run sends nothing.
func TestRunChecksNotifies(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	listener := holdConn(t, pool)
	if _, err := listener.Exec(ctx, `LISTEN webhooks_reconcile`); err != nil {
		t.Fatal(err)
	}
	wait := func(d time.Duration) (string, bool) {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		n, err := listener.WaitForNotification(wctx)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && wctx.Err() == nil {
				t.Fatalf("wait for notification: %v", err)
			}
			return "", false
		}
		return n.Payload, true
	}

	refreshViews(t, pool)
	if got, detail := breaches(runChecks(t, pool)); len(got) > 0 {
		t.Fatalf("healthy run breached %s", detail)
	}
	if p, ok := wait(time.Second); ok {
		t.Fatalf("healthy run sent NOTIFY webhooks_reconcile %s", p)
	}

	// A breach: a tombstoned id that arrived after all.
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES ('sume', 'job_1', 'status API: 404')`)
	ingest(t, pool, "sume", "job_1", "job.completed", `{"job_id": "job_1"}`)
	processAll(t, pool, "w")
	refreshViews(t, pool)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	var breached int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks.run_checks() WHERE NOT ok`).Scan(&breached); err != nil {
		t.Fatal(err)
	}
	if breached != 1 {
		t.Fatalf("%d checks breached, want 1", breached)
	}
	if p, ok := wait(500 * time.Millisecond); ok {
		t.Fatalf("notification before commit: %s", p)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	payload, ok := wait(10 * time.Second)
	if !ok {
		t.Fatal("no NOTIFY webhooks_reconcile after a breach")
	}
	var msg struct {
		Source   string   `json:"source"`
		Breached []string `json:"breached"`
	}
	if err := json.Unmarshal([]byte(payload), &msg); err != nil {
		t.Fatalf("payload %q: %v", payload, err)
	}
	if msg.Source != "run_checks" || !slices.Equal(msg.Breached, []string{"tombstones_with_event"}) {
		t.Fatalf("payload %q, want source run_checks and breached [tombstones_with_event]", payload)
	}
}

// TestRunChecksSurvivesBrokenCheck: a check whose query errors is reported
// not ok with a NULL value and its error recorded; every other check still
// runs, and a NULL value (no data) counts as ok.
func TestRunChecksSurvivesBrokenCheck(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	execSQL(t, pool, `INSERT INTO webhooks.checks (name, family, description, query, min_ok, max_ok, enabled) VALUES
		('aaa_division_by_zero', 'database', 'broken on purpose', 'SELECT 1/0', NULL, 1, true),
		('aaa_missing_table', 'volume', 'broken on purpose', 'SELECT count(*) FROM webhooks.no_such_table', NULL, 1, true),
		('aaa_two_rows', 'payload', 'broken on purpose', 'SELECT generate_series(1, 2)', NULL, 10, true),
		('aaa_not_a_number', 'latency', 'broken on purpose', $$SELECT 'many'$$, NULL, 10, true),
		('aaa_no_data', 'latency', 'NULL is ok', 'SELECT NULL::numeric -- no data', 0, 0, true),
		('aaa_trailing_semicolon', 'latency', 'tolerated', 'SELECT 0;', 0, 0, true),
		('aaa_disabled', 'latency', 'not run', 'SELECT 1/0', NULL, NULL, false)`)
	refreshViews(t, pool)
	res := runChecks(t, pool)

	enabled := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE enabled`)
	if int64(len(res)) != enabled {
		t.Fatalf("run_checks returned %d rows, want %d (every enabled check)", len(res), enabled)
	}
	got, detail := breaches(res)
	want := []string{"aaa_division_by_zero", "aaa_missing_table", "aaa_not_a_number", "aaa_two_rows"}
	if !slices.Equal(got, want) {
		t.Fatalf("breached %v (%s), want %v", got, detail, want)
	}
	for _, name := range want {
		if r, _ := resultOf(res, name); r.Value != nil {
			t.Errorf("%s: value %v, want NULL", name, *r.Value)
		}
	}
	if _, ok := resultOf(res, "aaa_disabled"); ok {
		t.Error("a disabled check ran")
	}
	var errText string
	if err := pool.QueryRow(context.Background(), `SELECT error FROM webhooks.check_results WHERE name = 'aaa_division_by_zero'`).Scan(&errText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errText, "22012") || !strings.Contains(errText, "division by zero") {
		t.Errorf("recorded error %q, want SQLSTATE 22012 and its message", errText)
	}
}

// TestCheckHistory: run_checks records every result, prunes history older
// than 7 days, and check_status shows the latest result per check.
func TestCheckHistory(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	execSQL(t, pool, `INSERT INTO webhooks.check_results (run_at, name, family, value, ok)
		VALUES (now() - interval '8 days', 'queue_depth', 'volume', 5, true),
		       (now() - interval '6 days', 'queue_depth', 'volume', 6, true)`)
	first := runChecks(t, pool)
	setMaxOK(t, pool, "queue_depth", -1) // any depth is now a breach
	second := runChecks(t, pool)

	checks := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE enabled`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE run_at > now() - interval '1 day'`); n != int64(len(first)+len(second)) || n != 2*checks {
		t.Fatalf("%d recent results, want %d", n, 2*checks)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE run_at < now() - interval '7 days'`); n != 0 {
		t.Fatalf("%d results older than 7 days survived", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE run_at < now() - interval '5 days'`); n != 1 {
		t.Fatalf("%d results of 6 days ago, want 1 (kept)", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_status WHERE run_at IS NOT NULL`); n != checks {
		t.Fatalf("check_status has %d checks with a result, want %d", n, checks)
	}
	var ok bool
	var maxOK float64
	if err := pool.QueryRow(context.Background(),
		`SELECT ok, max_ok FROM webhooks.check_status WHERE name = 'queue_depth'`).Scan(&ok, &maxOK); err != nil {
		t.Fatal(err)
	}
	if ok || maxOK != -1 {
		t.Fatalf("check_status queue_depth: ok=%v max_ok=%v, want the latest (breached) result", ok, maxOK)
	}
}

// TestChecksConcurrentRuns: run_checks from several sessions at once neither
// errors nor loses results.
func TestChecksConcurrentRuns(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 8)
	refreshViews(t, pool)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pool.Exec(context.Background(), `SELECT * FROM webhooks.run_checks()`)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checks := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE enabled`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results`); n != 4*checks {
		t.Fatalf("%d results, want %d", n, 4*checks)
	}
}

// TestChecksDocumented: docs/checks.md has a row for every check, under its
// family, with its default range, and no row for a check that does not exist.
func TestChecksDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/checks.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][2]string{} // name -> family, default
	family := ""
	for _, line := range strings.Split(string(doc), "\n") {
		if f, ok := strings.CutPrefix(line, "### "); ok {
			family = f
			continue
		}
		cells := strings.Split(line, "|")
		if family == "" || len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		documented[name] = [2]string{family, strings.TrimSpace(cells[3])}
	}

	pool := NewPool(t, 2)
	rows, err := pool.Query(context.Background(), `SELECT name, family, min_ok::text, max_ok::text FROM webhooks.checks`)
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		Name, Family string
		Min, Max     *string
	}
	checks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[check])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		want := "any"
		switch {
		case c.Min == nil && c.Max != nil:
			want = "≤ " + *c.Max
		case c.Min != nil && c.Max == nil:
			want = "≥ " + *c.Min
		case c.Min != nil && c.Max != nil:
			want = fmt.Sprintf("[%s, %s]", *c.Min, *c.Max)
		}
		got, ok := documented[c.Name]
		if !ok {
			t.Errorf("docs/checks.md has no row for %s", c.Name)
			continue
		}
		if got != [2]string{c.Family, want} {
			t.Errorf("docs/checks.md: %s is under %q with default %q, want %q and %q", c.Name, got[0], got[1], c.Family, want)
		}
		delete(documented, c.Name)
	}
	for name := range documented {
		t.Errorf("docs/checks.md documents %s, which is not a check", name)
	}
	if !strings.Contains(string(doc), fmt.Sprintf("**%d anomaly checks**", len(checks))) {
		t.Errorf("docs/checks.md does not say **%d anomaly checks**", len(checks))
	}
}
