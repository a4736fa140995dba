package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reconcileResult is what webhooks.reconcile() returns.
type reconcileResult struct {
	Skipped             bool             `json:"skipped"`
	RunID               int64            `json:"run_id"`
	DurationMS          *float64         `json:"duration_ms"`
	Trigger             string           `json:"trigger"`
	LeasesRescued       int64            `json:"leases_rescued"`
	LeasesDead          int64            `json:"leases_dead"`
	LeaseBatches        int64            `json:"lease_batches"`
	LeaseBatchSize      int64            `json:"lease_batch_size"`
	LeasesMore          bool             `json:"leases_more"`
	EventsChecked       int64            `json:"events_checked"`
	Contradictions      map[string]int64 `json:"contradictions"`
	ContradictionsTotal map[string]int64 `json:"contradictions_total"`
	ExpectationsMet     int64            `json:"expectations_met"`
	TombstonesResolved  int64            `json:"tombstones_resolved"`
	Gaps                int64            `json:"gaps"`
}

// reconcileOn runs one pass with the given SQL call on q and decodes it.
func reconcileOn(t testing.TB, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, call string, args ...any) (reconcileResult, map[string]any) {
	t.Helper()
	var raw []byte
	if err := q.QueryRow(context.Background(), `SELECT `+call, args...).Scan(&raw); err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	var r reconcileResult
	var m map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v: %s", call, err, raw)
	}
	_ = json.Unmarshal(raw, &m)
	return r, m
}

// TestReconcileSkippedWhileLockHeld: while one transaction holds the pass's
// advisory lock (a pass not yet committed, or anyone holding the documented
// key), reconcile() on another connection returns exactly {"skipped": true}
// at once and records nothing; once the holder commits, passes run again.
func TestReconcileSkippedWhileLockHeld(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	tests := []struct {
		name       string
		hold       string
		holderRuns int64 // passes the holder itself records
	}{
		{"a pass in an open transaction", `SELECT webhooks.reconcile()`, 1},
		{"the documented lock key", `SELECT pg_advisory_xact_lock(31638899913811299)`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`)
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, tc.hold); err != nil {
				t.Fatal(err)
			}
			var raw string
			if err := pool.QueryRow(ctx, `SELECT webhooks.reconcile()::text`).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if raw != `{"skipped": true}` {
				t.Fatalf("reconcile() while the lock is held = %s, want {\"skipped\": true}", raw)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if r := reconcile(t, pool); r.RunID == 0 {
				t.Fatalf("pass after the holder committed: %+v", r)
			}
			// The skipped call recorded nothing.
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs`) - before; n != tc.holderRuns+1 {
				t.Fatalf("%d runs recorded, want %d", n, tc.holderRuns+1)
			}
		})
	}
}

// TestReconcileConcurrentCalls: eight connections call reconcile() at once,
// each in a transaction that stays open until all eight have called it.
// Who wins is a real race; that exactly one runs is not.
func TestReconcileConcurrentCalls(t *testing.T) {
	t.Parallel()
	const callers = 8
	pool := NewPool(t, callers+1)
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		var called, ready sync.WaitGroup
		called.Add(callers)
		ready.Add(1)
		results := make(chan reconcileResult, callers)
		errs := make(chan error, callers)
		for i := 0; i < callers; i++ {
			go func() {
				tx, err := pool.Begin(ctx)
				if err != nil {
					called.Done()
					errs <- err
					return
				}
				defer tx.Rollback(ctx)
				var raw []byte
				err = tx.QueryRow(ctx, `SELECT webhooks.reconcile(trigger => 'race')`).Scan(&raw)
				called.Done()
				if err != nil {
					errs <- err
					return
				}
				ready.Wait() // hold the transaction until every caller has called
				var r reconcileResult
				if err := json.Unmarshal(raw, &r); err != nil {
					errs <- err
					return
				}
				results <- r
				errs <- tx.Commit(ctx)
			}()
		}
		called.Wait()
		ready.Done()
		ran := 0
		for i := 0; i < callers; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if r := <-results; !r.Skipped {
				ran++
			}
		}
		if ran != 1 {
			t.Fatalf("round %d: %d of %d concurrent passes ran, want exactly 1", round, ran, callers)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.reconcile_runs WHERE trigger = 'race'`); n != 3 {
		t.Fatalf("%d runs recorded, want 3 (one per round)", n)
	}
}

// expiredLeases creates n events claimed by a worker whose lease has
// expired; every dead-th has used its last attempt (0: none).
func expiredLeases(t *testing.T, pool *pgxpool.Pool, n, dead int) {
	t.Helper()
	execSQL(t, pool, `
		INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, attempts,
		                             max_attempts, claimed_at, locked_by, locked_until)
		SELECT 'p', 'lease-' || g, 't', '{}', 'processing',
		       CASE WHEN $2 > 0 AND g % $2 = 0 THEN 3 ELSE 1 END, 3,
		       now() - interval '10 minutes', 'gone-worker', now() - interval '1 minute'
		FROM generate_series(1, $1) g`, n, dead)
}

// TestReconcileRescuesLeasesInBatches: 10,000 expired leases are rescued by
// one pass in bounded batches (the counts say how many and of what size);
// a cap on batches leaves the rest for the next pass and says so.
func TestReconcileRescuesLeasesInBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		batchSize, maxBat int
		wantBatches       []int64 // per pass
		wantMore          []bool
	}{
		{"default batch size", 1000, 100, []int64{10}, []bool{false}},
		{"uneven batches", 3000, 100, []int64{4}, []bool{false}},
		{"capped passes", 1000, 4, []int64{4, 4, 2}, []bool{true, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 2)
			expiredLeases(t, pool, 10000, 10)
			var rescued, dead int64
			for pass := range tc.wantBatches {
				r, _ := reconcileOn(t, pool, `webhooks.reconcile(batch_size => $1, max_batches => $2)`, tc.batchSize, tc.maxBat)
				if r.LeaseBatches != tc.wantBatches[pass] || r.LeasesMore != tc.wantMore[pass] || r.LeaseBatchSize != int64(tc.batchSize) {
					t.Fatalf("pass %d: %d batches of %d (more %v), want %d (more %v)", pass+1,
						r.LeaseBatches, r.LeaseBatchSize, r.LeasesMore, tc.wantBatches[pass], tc.wantMore[pass])
				}
				if n := r.LeasesRescued + r.LeasesDead; n > r.LeaseBatches*int64(tc.batchSize) {
					t.Fatalf("pass %d moved %d leases in %d batches of %d", pass+1, n, r.LeaseBatches, tc.batchSize)
				}
				rescued += r.LeasesRescued
				dead += r.LeasesDead
				// The run records the same counts.
				var counts []byte
				if err := pool.QueryRow(context.Background(),
					`SELECT counts FROM webhooks.reconcile_runs WHERE id = $1`, r.RunID).Scan(&counts); err != nil {
					t.Fatal(err)
				}
				var rec reconcileResult
				if err := json.Unmarshal(counts, &rec); err != nil || rec.LeaseBatches != r.LeaseBatches ||
					rec.LeaseBatchSize != r.LeaseBatchSize || rec.LeasesRescued != r.LeasesRescued {
					t.Fatalf("reconcile_runs.counts = %s, returned %+v", counts, r)
				}
			}
			if rescued != 9000 || dead != 1000 {
				t.Fatalf("rescued %d and killed %d, want 9000 and 1000", rescued, dead)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processing'`); n != 0 {
				t.Fatalf("%d events still processing", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'pending'`); n != 9000 {
				t.Fatalf("%d events pending, want 9000", n)
			}
			if r := reconcile(t, pool); r.LeaseBatches != 0 || r.LeasesRescued != 0 {
				t.Fatalf("a pass with nothing to rescue: %+v", r)
			}
		})
	}
}

// TestReconcileLeavesLiveLeases: leases that have not expired are not touched.
func TestReconcileLeavesLiveLeases(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	for i := 0; i < 5; i++ {
		ingest(t, pool, "p", fmt.Sprint(i), "t", `{}`)
	}
	if got := claim(t, pool, "w", 5, "1 hour"); len(got) != 5 {
		t.Fatalf("claimed %d", len(got))
	}
	if r := reconcile(t, pool); r.LeasesRescued != 0 {
		t.Fatalf("rescued %d live leases", r.LeasesRescued)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processing' AND locked_by = 'w'`); n != 5 {
		t.Fatalf("%d events still held by w, want 5", n)
	}
}

var contradictionKinds = []string{"event_type_mismatch", "error_missing", "status_mismatch", "duplicate_terminal"}

// TestReconcileContradictions: each kind of contradiction between an
// event's state and its payload is counted separately, on the pass that
// first finds it, and never again; consistent events are not flagged.
func TestReconcileContradictions(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	tests := []struct {
		provider, id, eventType, payload string
		want                             []string // kinds
	}{
		// consistent events
		{"sume", "ok-completed", "job.completed", `{"job_id": "ok-completed", "event": "job.completed", "status": "COMPLETED"}`, nil},
		{"sume", "ok-failed", "job.failed", `{"job_id": "ok-failed", "status": "ERROR", "error": {"code": "oom"}}`, nil},
		{"sume", "ok-canceled", "job.canceled", `{"job_id": "ok-canceled", "status": "ERROR", "error": {"code": "canceled"}}`, nil},
		{"sume", "ok-canceled-api", "job.canceled", `{"job_id": "ok-canceled-api", "status": "CANCELED"}`, nil},
		{"sume", "ok-no-status", "job.completed", `{"job_id": "ok-no-status"}`, nil},
		{"sume", "ok-other", "file.uploaded", `{"id": "ok-other", "type": "file.uploaded"}`, nil},
		{"stripe", "evt_ok", "charge.succeeded", `{"id": "evt_ok", "type": "charge.succeeded"}`, nil},
		// GitHub and Shopify take their type from a header; "type" in the body is a resource attribute.
		{"shop", "s1", "disputes/create", `{"id": 1, "type": "chargeback"}`, nil},
		{"gh", "d1", "push", `{"type": "User"}`, nil},
		// contradictions
		{"sume", "bad-type", "job.completed", `{"job_id": "bad-type", "event": "job.failed", "status": "COMPLETED"}`, []string{"event_type_mismatch"}},
		{"sume", "bad-type-2", "job.completed", `{"job_id": "bad-type-2", "type": "job.failed", "status": "COMPLETED"}`, []string{"event_type_mismatch"}},
		{"stripe", "evt_bad", "charge.succeeded", `{"id": "evt_bad", "type": "charge.failed"}`, []string{"event_type_mismatch"}},
		{"sume", "no-error", "job.failed", `{"job_id": "no-error", "status": "ERROR"}`, []string{"error_missing"}},
		{"sume", "null-error", "job.canceled", `{"job_id": "null-error", "status": "ERROR", "error": null}`, []string{"error_missing"}},
		{"sume", "failed-completed", "job.failed", `{"job_id": "failed-completed", "status": "COMPLETED", "error": {"code": "x"}}`, []string{"status_mismatch"}},
		{"sume", "failed-canceled", "job.failed", `{"job_id": "failed-canceled", "status": "ERROR", "error": {"code": "canceled"}}`, []string{"status_mismatch"}},
		{"sume", "canceled-failed", "job.canceled", `{"job_id": "canceled-failed", "status": "ERROR", "error": {"code": "oom"}}`, []string{"status_mismatch"}},
		{"sume", "completed-error", "job.completed", `{"job_id": "completed-error", "status": "ERROR"}`, []string{"status_mismatch"}},
		{"sume", "failed-nothing", "job.failed", `{"job_id": "failed-nothing"}`, []string{"error_missing", "status_mismatch"}},
		// Two terminal events for one job under different keys: the later one is flagged.
		{"sume", "job-7", "job.completed", `{"job_id": "job-7", "status": "COMPLETED"}`, nil},
		{"sume", "evt-7b", "job.failed", `{"job_id": "job-7", "status": "ERROR", "error": {"code": "x"}}`, []string{"duplicate_terminal"}},
		{"sume", "evt-7c", "job.completed", `{"job_id": "job-7", "status": "COMPLETED"}`, []string{"duplicate_terminal"}},
		// The same job id at another provider is another job.
		{"sume-eu", "job-7", "job.completed", `{"job_id": "job-7", "status": "COMPLETED"}`, nil},
	}
	want := map[string]int64{}
	wantEvents := map[string][]string{}
	for _, tc := range tests {
		ingest(t, pool, tc.provider, tc.id, tc.eventType, tc.payload)
		for _, k := range tc.want {
			want[k]++
		}
		wantEvents[tc.provider+"/"+tc.id] = tc.want
	}
	first := reconcile(t, pool)
	for _, k := range contradictionKinds {
		if first.Contradictions[k] != want[k] || first.ContradictionsTotal[k] != want[k] {
			t.Errorf("first pass %s: new %d, total %d; want %d", k, first.Contradictions[k], first.ContradictionsTotal[k], want[k])
		}
	}
	if first.EventsChecked != int64(len(tests)) {
		t.Errorf("first pass checked %d events, want %d", first.EventsChecked, len(tests))
	}
	rows, err := pool.Query(context.Background(), `
		SELECT e.provider || '/' || e.external_id, k.kind FROM webhooks.contradictions k
		JOIN webhooks.events e ON e.id = k.event_id ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for rows.Next() {
		var ev, kind string
		if err := rows.Scan(&ev, &kind); err != nil {
			t.Fatal(err)
		}
		got[ev] = append(got[ev], kind)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for ev, kinds := range wantEvents {
		slices.Sort(kinds)
		if !slices.Equal(got[ev], kinds) {
			t.Errorf("%s flagged %v, want %v", ev, got[ev], kinds)
		}
	}

	// Re-reading everything finds the same rows and counts none of them again.
	second, _ := reconcileOn(t, pool, `webhooks.reconcile(recheck_all => true)`)
	for _, k := range contradictionKinds {
		if second.Contradictions[k] != 0 || second.ContradictionsTotal[k] != want[k] {
			t.Errorf("second pass %s: new %d, total %d; want 0 and %d", k, second.Contradictions[k], second.ContradictionsTotal[k], want[k])
		}
	}
	var total int64
	for _, n := range want {
		total += n
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.contradictions`); n != total {
		t.Errorf("%d contradictions recorded, want %d", n, total)
	}
}

// TestReconcileRereadsOnlyRecentEvents: a pass re-reads the events received
// since the previous pass (minus the lookback) and pending events whose
// payload a redelivery changed since then, not the whole table; recheck_all
// reads everything.
func TestReconcileRereadsOnlyRecentEvents(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	ingest(t, pool, "sume", "old", "job.failed", `{"job_id": "old", "status": "ERROR", "error": {}}`)
	ingest(t, pool, "sume", "old-pending", "job.failed", `{"job_id": "old-pending", "status": "ERROR", "error": {}}`)
	reconcile(t, pool)
	// Make the earlier rows and pass look a day old, then corrupt an old row.
	execSQL(t, pool, `UPDATE webhooks.events SET received_at = received_at - interval '1 day', updated_at = updated_at - interval '1 day'`)
	execSQL(t, pool, `UPDATE webhooks.reconcile_runs SET started_at = started_at - interval '1 day'`)
	reconcile(t, pool)
	execSQL(t, pool, `UPDATE webhooks.events SET payload = '{"job_id": "old", "status": "ERROR"}', status = 'processed', processed_at = now()
		WHERE external_id = 'old'`)
	// A redelivery reconciles the payload of the pending one.
	if _, outcome := ingest(t, pool, "sume", "old-pending", "job.failed", `{"job_id": "old-pending", "status": "COMPLETED", "error": {}}`); outcome != "updated" {
		t.Fatalf("redelivery: %s", outcome)
	}
	ingest(t, pool, "sume", "new", "job.failed", `{"job_id": "new"}`)

	r := reconcile(t, pool)
	if r.EventsChecked != 2 || r.Contradictions["error_missing"] != 1 || r.Contradictions["status_mismatch"] != 2 {
		t.Fatalf("incremental pass: checked %d, new %v; want 2 rows (new, old-pending), error_missing 1, status_mismatch 2",
			r.EventsChecked, r.Contradictions)
	}
	all, _ := reconcileOn(t, pool, `webhooks.reconcile(recheck_all => true)`)
	if all.EventsChecked != 3 || all.Contradictions["error_missing"] != 1 {
		t.Fatalf("recheck_all: checked %d, new %v; want 3 rows and the old row's error_missing", all.EventsChecked, all.Contradictions)
	}
}

// TestReconcileResolvesExpectationsAndTombstones: expectations whose event
// or tombstone exists are marked met once; tombstones whose event arrived
// after all are marked resolved with the event's id; the pass reports the
// gaps left.
func TestReconcileResolvesExpectationsAndTombstones(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	for _, id := range []string{"arrived", "tombstoned", "missing", "not-due", "late"} {
		deadline := "now() - interval '1 hour'"
		if id == "not-due" {
			deadline = "now() + interval '1 hour'"
		}
		execSQL(t, pool, fmt.Sprintf(`SELECT webhooks.expect('sume', '%s', %s)`, id, deadline))
	}
	ingest(t, pool, "sume", "arrived", "job.completed", `{"job_id": "arrived", "status": "COMPLETED"}`)
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'tombstoned', 'unknown to provider')`)
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'late', 'unknown to provider')`)
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'never-expected', 'unknown to provider')`)
	lateID, _ := ingest(t, pool, "sume", "late", "job.completed", `{"job_id": "late", "status": "COMPLETED"}`)

	r := reconcile(t, pool)
	if r.ExpectationsMet != 3 || r.TombstonesResolved != 1 || r.Gaps != 1 {
		t.Fatalf("first pass: met %d, resolved %d, gaps %d; want 3, 1, 1", r.ExpectationsMet, r.TombstonesResolved, r.Gaps)
	}
	rows, err := pool.Query(context.Background(),
		`SELECT external_id FROM webhooks.expectations WHERE met_at IS NULL ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(open, []string{"missing", "not-due"}) {
		t.Fatalf("open expectations %v, want [missing not-due]", open)
	}
	var resolvedEvent int64
	if err := pool.QueryRow(context.Background(), `SELECT resolved_event_id FROM webhooks.tombstones
		WHERE external_id = 'late' AND resolved_at IS NOT NULL`).Scan(&resolvedEvent); err != nil || resolvedEvent != lateID {
		t.Fatalf("tombstone 'late' resolved by %d (%v), want event %d", resolvedEvent, err, lateID)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones WHERE resolved_at IS NOT NULL`); n != 1 {
		t.Fatalf("%d tombstones resolved, want 1", n)
	}
	again := reconcile(t, pool)
	if again.ExpectationsMet != 0 || again.TombstonesResolved != 0 || again.Gaps != 1 {
		t.Fatalf("second pass: met %d, resolved %d, gaps %d; want 0, 0, 1", again.ExpectationsMet, again.TombstonesResolved, again.Gaps)
	}
}

// TestReconcileRecordsRun: the pass returns and records its counts, its
// trigger and its duration.
func TestReconcileRecordsRun(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	r, m := reconcileOn(t, pool, `webhooks.reconcile(trigger => 'schedule')`)
	wantKeys := []string{"skipped", "run_id", "duration_ms", "trigger", "leases_rescued", "leases_dead",
		"lease_batches", "lease_batch_size", "leases_more", "checked_since", "events_checked", "contradictions",
		"contradictions_total", "jobs_unchecked", "expectations_met", "tombstones_resolved", "gaps"}
	slices.Sort(wantKeys)
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, wantKeys) {
		t.Fatalf("keys %v, want %v", got, wantKeys)
	}
	if r.DurationMS == nil || *r.DurationMS < 0 || r.Trigger != "schedule" {
		t.Fatalf("result %+v", r)
	}
	var trigger string
	var duration float64
	var counts []byte
	err := pool.QueryRow(context.Background(), `SELECT trigger, duration_ms, counts FROM webhooks.reconcile_runs
		WHERE id = $1 AND finished_at >= started_at`, r.RunID).Scan(&trigger, &duration, &counts)
	if err != nil {
		t.Fatalf("run %d: %v", r.RunID, err)
	}
	if trigger != "schedule" || duration != *r.DurationMS {
		t.Fatalf("recorded trigger %q, duration %v; returned %+v", trigger, duration, r)
	}
	_, err = pool.Exec(context.Background(), `SELECT webhooks.reconcile(batch_size => 0)`)
	wantPgError(t, err, "22023", "batch_size must be between 1 and 100000")
}
