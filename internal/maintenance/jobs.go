package maintenance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/retention"
	"github.com/pginbox/pginbox/internal/views"
)

// prune enforces retention in short transactions: webhooks.prune() is
// called with a small max_rows until it reports nothing more to do.
func (s *Maintenance) prune(ctx context.Context, trigger string) error {
	rep, err := retention.Prune(ctx, s.pool, s.cfg.KeepPayload, s.cfg.KeepKeys)
	if err != nil {
		return err
	}
	s.metrics.Pruned.WithLabelValues("payload").Add(float64(rep.PayloadsPruned))
	s.metrics.Pruned.WithLabelValues("event").Add(float64(rep.EventsDeleted))
	if rep.PayloadsPruned+rep.EventsDeleted > 0 {
		s.log.Info("retention", "trigger", trigger, "payloads_pruned", rep.PayloadsPruned, "events_deleted", rep.EventsDeleted, "calls", rep.Calls)
	}
	return nil
}

// reconcile runs one pass of webhooks.reconcile() (which skips itself when
// another pass holds its lock) and, after scheduled passes, asks the backfill
// job for a pass: backfill is a job of its own, so a slow or hung provider
// API never delays the next reconcile pass (and its lease rescue).
func (s *Maintenance) reconcile(ctx context.Context, trigger string) error {
	var out []byte
	if err := s.pool.QueryRow(ctx, `SELECT webhooks.reconcile($1)`, trigger).Scan(&out); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	s.log.Info("reconcile pass", "trigger", trigger, "result", string(out))
	if trigger == "schedule" && s.jobs["backfill"] != nil {
		s.jobs["backfill"].Trigger("schedule")
	}
	return nil
}

// backfill runs one backfill pass, bounded by its deadline, skipping the
// providers whose API kept failing (s.backoff): the gaps of per-id APIs
// (Sume), then each provider's event log (Stripe, GitHub).
func (s *Maintenance) backfill(ctx context.Context, _ string) error {
	opts := backfill.Options{Logger: s.log, PassTimeout: s.cfg.BackfillTimeout, Backoff: s.backoff, Lookback: s.cfg.BackfillLookback}
	var errs []error
	if len(s.cfg.Backfill) > 0 {
		errs = append(errs, s.backfillGaps(ctx, opts))
	}
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Logs)) {
		if ctx.Err() != nil {
			break
		}
		if until := s.backoff.Until(name); until.After(time.Now()) {
			continue
		}
		// RunLog logs its own "backfill event-log pass" line.
		rep, err := backfill.RunLog(ctx, s.pool, s.cfg.Logs[name], opts)
		s.metrics.BackfillLog.WithLabelValues(name, "listed").Add(float64(rep.Listed))
		s.metrics.BackfillLog.WithLabelValues(name, "recovered").Add(float64(rep.Recovered))
		s.metrics.BackfillLog.WithLabelValues(name, "duplicate").Add(float64(rep.Duplicates))
		s.metrics.BackfillLog.WithLabelValues(name, "page").Add(float64(rep.Pages))
		s.metrics.BackfillLogSkipped.WithLabelValues(name).Add(float64(rep.Skipped))
		switch {
		case rep.Complete:
			s.metrics.BackfillLogPasses.WithLabelValues(name, "complete").Inc()
			s.backoff.Succeed(name)
		default:
			s.metrics.BackfillLogPasses.WithLabelValues(name, logErrorKind(err)).Inc()
			if ctx.Err() == nil && !errors.Is(err, backfill.ErrUnauthorized) {
				s.backoff.Fail(name, retryAfter(err))
			}
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return nil
}

// retryAfter is the Retry-After of the API error that cut a pass short, 0
// when none.
func retryAfter(err error) time.Duration {
	var apiErr *backfill.APIError
	if errors.As(err, &apiErr) {
		return apiErr.RetryAfter
	}
	return 0
}

// probe asks the providers whose API is being backed off, every probe
// interval (the pass interval, at most 10 s), whether they answer again
// (one request each, [backfill.Backoff.Probe]); when one does, its backoff
// ends and a backfill pass starts at once instead of after the backoff.
func (s *Maintenance) probe(ctx context.Context) {
	t := time.NewTicker(backfill.ProbeEvery(s.cfg.ReconcileEvery))
	defer t.Stop()
	opts := backfill.Options{Logger: s.log}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ended := s.backoff.Probe(ctx, s.pool, s.cfg.Backfill, s.cfg.Logs, opts); len(ended) > 0 {
			s.jobs["backfill"].Trigger("probe")
		}
	}
}

// logErrorKind labels why an event-log pass was cut short.
func logErrorKind(err error) string {
	var apiErr *backfill.APIError
	var malformed *backfill.MalformedError
	var refused *backfill.RefusedError
	switch {
	case errors.Is(err, backfill.ErrUnauthorized):
		return "unauthorized"
	case errors.As(err, &malformed):
		return "malformed"
	case errors.As(err, &refused):
		return "refused"
	case errors.As(err, &apiErr):
		return "api_error"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "cut_short"
	}
	return "error"
}

// backfillGaps runs one pass over the gaps of the per-id APIs.
func (s *Maintenance) backfillGaps(ctx context.Context, opts backfill.Options) error {
	// backfill.Run logs its own "backfill pass" line, under component=backfill.
	rep, err := backfill.Run(ctx, s.pool, s.cfg.Backfill, opts)
	s.metrics.Backfill.WithLabelValues("ingested").Add(float64(rep.Ingested))
	s.metrics.Backfill.WithLabelValues("duplicate").Add(float64(rep.Duplicates))
	s.metrics.Backfill.WithLabelValues("tombstoned").Add(float64(rep.Tombstoned))
	s.metrics.Backfill.WithLabelValues("postponed").Add(float64(rep.Postponed))
	s.metrics.Backfill.WithLabelValues("failed").Add(float64(rep.Failed + rep.Malformed + rep.Unauthorized))
	for provider, reasons := range rep.RefusedBy {
		for reason, n := range reasons {
			s.metrics.BackfillRefused.WithLabelValues(provider, reason).Add(float64(n))
		}
	}
	return err
}

// checks refreshes the views and evaluates the anomaly checks.
func (s *Maintenance) checks(ctx context.Context, _ string) error {
	if err := views.Refresh(ctx, s.pool); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `SELECT count(*) FROM webhooks.run_checks()`); err != nil {
		return fmt.Errorf("run checks: %w", err)
	}
	if s.cfg.AfterChecks != nil {
		s.cfg.AfterChecks()
	}
	return nil
}
