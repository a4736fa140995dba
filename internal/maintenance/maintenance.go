// Package maintenance runs the runner's scheduled jobs: reconciliation
// (lease rescue and gap detection, webhooks.reconcile()), backfill from the
// providers' APIs after each scheduled reconcile pass (and at once when a
// provider API being backed off answers a probe again), the view refreshes
// and anomaly checks, and retention. Each job runs on its own clock and on
// demand ([Maintenance.Trigger]); passes of one job never overlap.
package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/metrics"
)

// Config schedules the jobs. A zero or negative period runs a job only when
// triggered; the runner passes its own defaults.
type Config struct {
	// ReconcileEvery schedules webhooks.reconcile() passes.
	ReconcileEvery time.Duration
	// ChecksEvery schedules the view refreshes and anomaly checks.
	ChecksEvery time.Duration
	// PruneEvery schedules retention.
	PruneEvery time.Duration
	// HistoryEvery schedules the move of processed events into history.
	HistoryEvery time.Duration
	// KeepPayload and KeepKeys are retention's ages (see package retention).
	KeepPayload, KeepKeys time.Duration
	// Backfill are the per-id provider APIs a backfill pass asks after each
	// scheduled reconcile pass; Logs the providers' event logs it reads.
	// Both empty: no backfill job.
	Backfill map[string]backfill.StatusAPI
	Logs     map[string]backfill.EventLog
	// BackfillTimeout bounds one backfill pass; BackfillLookback is how
	// far back a provider's first event-log pass reads.
	BackfillTimeout, BackfillLookback time.Duration
	// AfterChecks, when set, is called after each run of the checks that
	// committed (the alert sender's wake-up).
	AfterChecks func()
}

// NotifiedPassGap is the least time between two reconcile passes a runner
// starts on NOTIFY webhooks_reconcile, which any role that can connect may
// send: a storm of notifications costs at most one pass a second.
const NotifiedPassGap = time.Second

// Maintenance holds the scheduled jobs of one runner.
type Maintenance struct {
	pool    *pgxpool.Pool
	cfg     Config
	metrics *metrics.Set
	log     *slog.Logger
	jobs    map[string]*job
	backoff *backfill.Backoff // providers whose API keeps failing

	daysEnsured time.Time // the history job's last ensure_history_days()
}

// New registers the jobs: reconciliation, backfill (asked for by each
// scheduled reconcile pass), view refresh plus anomaly checks, and
// retention. They run on pool once Run is called.
func New(pool *pgxpool.Pool, cfg Config, m *metrics.Set, log *slog.Logger) *Maintenance {
	s := &Maintenance{pool: pool, cfg: cfg, metrics: m, log: log, jobs: map[string]*job{}}
	s.jobs["reconcile"] = newJob("reconcile", cfg.ReconcileEvery, s.reconcile)
	s.jobs["reconcile"].NotifyGap = NotifiedPassGap
	s.jobs["checks"] = newJob("checks", cfg.ChecksEvery, s.checks)
	s.jobs["prune"] = newJob("prune", cfg.PruneEvery, s.prune)
	s.jobs["history"] = newJob("history", cfg.HistoryEvery, s.history)
	if len(cfg.Backfill) > 0 || len(cfg.Logs) > 0 {
		// Triggered after each scheduled reconcile pass, never on a clock of its own.
		s.jobs["backfill"] = newJob("backfill", 0, s.backfill)
		s.backoff = backfill.NewBackoff(backoffBase(cfg.ReconcileEvery), backoffMax(cfg.ReconcileEvery))
	}
	s.initSeries()
	return s
}

// initSeries serves as 0, from the start, the series of the jobs and
// providers this runner has: an alert rule's increase() or rate() sees the
// first failure only on a series that existed before it, and a series never
// served makes absent() misfire.
func (s *Maintenance) initSeries() {
	m := s.metrics
	for name := range s.jobs {
		m.ScheduledRuns.WithLabelValues(name, "ok")
		m.ScheduledRuns.WithLabelValues(name, "error")
	}
	// The refusals and log passes of every configured provider are
	// metrics.Set.ServeProviders' (the runner serves them before it starts).
	for name := range s.cfg.Logs {
		m.BackfillLogSkipped.WithLabelValues(name) // served as 0 before the first skip
	}
}

// backoffBase is where the backoff of a failing provider API starts: the
// pass interval (one minute when passes are not scheduled).
func backoffBase(pass time.Duration) time.Duration {
	if pass <= 0 {
		return time.Minute
	}
	return pass
}

// backoffMax caps the backoff of a failing provider API: 8 pass intervals,
// at most 30 minutes (and never under the pass interval). The probes, not the
// backoff, find the API back: the cap bounds how often an API that answers
// the probe but fails the pass gets a full pass.
func backoffMax(pass time.Duration) time.Duration {
	base := backoffBase(pass)
	return max(min(8*base, 30*time.Minute), base)
}

// Run runs every job until ctx ends.
func (s *Maintenance) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.jobs["backfill"] != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.probe(ctx)
		}()
	}
	for _, j := range s.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.Loop(ctx, s.metrics, s.log.With("component", "schedule"))
		}()
	}
	wg.Wait()
}

// Trigger runs the named job now (see [job.Trigger]); false if there is no
// such job.
func (s *Maintenance) Trigger(name, why string) bool {
	j, ok := s.jobs[name]
	if ok {
		j.Trigger(why)
	}
	return ok
}
