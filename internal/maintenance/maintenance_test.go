package maintenance

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestJobsRunAtTheirIntervals: the runner's jobs, on a real database, each
// run on its own clock (reconcile every 100 ms, checks every 250 ms, prune
// every 400 ms: never more often, the first pass one period in), and a job
// that fails every pass (the checks, their function renamed away) keeps
// running and counting its errors without stopping the others, and without
// the wake-up of a committed check run.
func TestJobsRunAtTheirIntervals(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	pgtest.Exec(t, pool, `ALTER FUNCTION webhooks.run_checks() RENAME TO run_checks_gone`)
	var afterChecks atomic.Int32
	m := metrics.New(pool)
	s := New(pool, Config{
		ReconcileEvery: 100 * time.Millisecond, ChecksEvery: 250 * time.Millisecond, PruneEvery: 400 * time.Millisecond,
		KeepPayload: 30 * 24 * time.Hour, KeepKeys: 90 * 24 * time.Hour,
		AfterChecks: func() { afterChecks.Add(1) },
	}, m, slog.New(slog.DiscardHandler))

	const window = 1300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	s.Run(ctx) // returns when ctx ends

	runs := func(job, result string) int { return counter(t, m.ScheduledRuns.WithLabelValues(job, result)) }
	for _, tc := range []struct {
		job    string
		every  time.Duration
		least  int // on a loaded machine passes run late, never early
		result string
	}{
		{job: "reconcile", every: 100 * time.Millisecond, least: 4, result: "ok"},
		{job: "checks", every: 250 * time.Millisecond, least: 2, result: "error"},
		{job: "prune", every: 400 * time.Millisecond, least: 1, result: "ok"},
	} {
		most := int(window / tc.every)
		if n := runs(tc.job, tc.result); n < tc.least || n > most {
			t.Errorf("%s: %d passes (%s) in %v, want %d to %d (one per %v)", tc.job, n, tc.result, window, tc.least, most, tc.every)
		}
	}
	if n := runs("checks", "ok"); n != 0 {
		t.Errorf("checks: %d passes ok, with webhooks.run_checks() gone", n)
	}
	if n := runs("reconcile", "error") + runs("prune", "error"); n != 0 {
		t.Errorf("%d failed passes of reconcile and prune: the failing checks stopped them", n)
	}
	if n := afterChecks.Load(); n != 0 {
		t.Errorf("AfterChecks called %d times for check runs that failed", n)
	}
	// Each reconcile pass counted is a pass the database recorded (and the
	// pass the end of ctx cut short may have committed uncounted).
	var recorded int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.reconcile_runs WHERE trigger = 'schedule'`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if ok := runs("reconcile", "ok"); recorded != ok && recorded != ok+1 {
		t.Errorf("webhooks.reconcile_runs has %d scheduled passes, the metric %d", recorded, ok)
	}
}

// TestNotifiedPassesAreSpaced: a storm of notifications (one every 5 ms for
// a second) costs one pass per NotifyGap, the first at once (and, after the
// storm, the pass held and the one queued behind it), and passes never
// overlap; once the storm's passes are done, a trigger of another kind is
// not held.
func TestNotifiedPassesAreSpaced(t *testing.T) {
	t.Parallel()
	const gap = 300 * time.Millisecond
	var passes, inFlight, overlap atomic.Int32
	var starts []time.Duration
	start := time.Now()
	j := newJob("reconcile", 0, func(ctx context.Context, trigger string) error {
		if inFlight.Add(1) > 1 {
			overlap.Add(1)
		}
		defer inFlight.Add(-1)
		passes.Add(1)
		starts = append(starts, time.Since(start)) // passes never overlap, so no race
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	j.NotifyGap = gap
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Loop(ctx, metrics.New(nil), slog.New(slog.DiscardHandler))
	}()
	for time.Since(start) < time.Second {
		j.Trigger("notify")
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(2*gap + 100*time.Millisecond) // the pass held and the one queued
	stormEnd := passes.Load()
	j.Trigger("manual")
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done

	if most := int32(time.Second/gap) + 3; stormEnd < 2 || stormEnd > most {
		t.Errorf("%d passes for a second of notifications, want 2 to %d (one per %v): %v", stormEnd, most, gap, starts)
	}
	if len(starts) > 0 && starts[0] > 100*time.Millisecond {
		t.Errorf("the first notified pass started after %v, want at once", starts[0])
	}
	for i := 1; i < int(stormEnd); i++ {
		if d := starts[i] - starts[i-1]; d < gap-10*time.Millisecond {
			t.Errorf("notified passes %d and %d started %v apart, less than the gap %v", i-1, i, d, gap)
		}
	}
	if n := passes.Load() - stormEnd; n != 1 {
		t.Errorf("a manual trigger right after a notified pass ran %d passes within 100 ms, want 1 (not held)", n)
	}
	if n := overlap.Load(); n != 0 {
		t.Errorf("%d passes started while another ran", n)
	}
}
