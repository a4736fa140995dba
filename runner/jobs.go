package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// addJobs registers the scheduled jobs whose SQL exists in this schema
// version: reconciliation, and view refresh plus anomaly checks.
func (s *Server) addJobs() {
	s.jobs["reconcile"] = NewJob("reconcile", s.cfg.ReconcileEvery, s.reconcile)
	s.jobs["checks"] = NewJob("checks", s.cfg.ChecksEvery, s.checks)
	s.jobs["prune"] = NewJob("prune", s.cfg.PruneEvery, s.prune)
}

// PruneReport is what one retention run removed.
type PruneReport struct {
	PayloadsPruned int64 `json:"payloads_pruned"`
	EventsDeleted  int64 `json:"events_deleted"`
	Calls          int   `json:"calls"`
}

// prune enforces retention in short transactions: webhooks.prune() is
// called with a small max_rows until it reports nothing more to do.
func (s *Server) prune(ctx context.Context, trigger string) error {
	rep, err := Prune(ctx, s.work, s.cfg.KeepPayload, s.cfg.KeepKeys)
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

// Prune calls webhooks.prune(keepPayload, keepKeys) in batches of at most
// 5,000 rows per kind and per transaction until nothing is left.
func Prune(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, keepPayload, keepKeys time.Duration) (PruneReport, error) {
	var rep PruneReport
	for rep.Calls < 10000 {
		var out struct {
			Payloads int64 `json:"payloads_pruned"`
			Events   int64 `json:"events_deleted"`
			More     bool  `json:"more"`
		}
		var raw []byte
		err := q.QueryRow(ctx, `SELECT webhooks.prune($1::interval, $2::interval, batch_size => 1000, max_rows => 5000)`,
			keepPayload.String(), keepKeys.String()).Scan(&raw)
		if err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
		rep.Calls++
		rep.PayloadsPruned += out.Payloads
		rep.EventsDeleted += out.Events
		if !out.More {
			break
		}
	}
	return rep, nil
}

// reconcile runs one pass of webhooks.reconcile() (which skips itself when
// another pass holds its lock) and, after scheduled passes, backfills.
func (s *Server) reconcile(ctx context.Context, trigger string) error {
	if !s.hasFunction(ctx, "reconcile") {
		return nil
	}
	var out []byte
	if err := s.work.QueryRow(ctx, `SELECT webhooks.reconcile($1)`, trigger).Scan(&out); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	s.log.Info("reconcile pass", "trigger", trigger, "result", string(out))
	if trigger != "schedule" || len(s.cfg.StatusAPIs) == 0 {
		return nil
	}
	rep, err := Backfill(ctx, s.work, s.cfg.StatusAPIs, BackfillOptions{Logger: s.log.With("component", "backfill")})
	s.metrics.Backfill.WithLabelValues("ingested").Add(float64(rep.Ingested))
	s.metrics.Backfill.WithLabelValues("duplicate").Add(float64(rep.Duplicates))
	s.metrics.Backfill.WithLabelValues("tombstoned").Add(float64(rep.Tombstoned))
	s.metrics.Backfill.WithLabelValues("postponed").Add(float64(rep.Postponed))
	s.metrics.Backfill.WithLabelValues("failed").Add(float64(rep.Failed + rep.Malformed + rep.Unauthorized))
	if rep.Gaps > 0 {
		s.log.Info("backfill pass", "gaps", rep.Gaps, "ingested", rep.Ingested, "tombstoned", rep.Tombstoned,
			"postponed", rep.Postponed, "failed", rep.Failed, "malformed", rep.Malformed, "unauthorized", rep.Unauthorized)
	}
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return nil
}

// checks refreshes the views and evaluates the anomaly checks.
func (s *Server) checks(ctx context.Context, _ string) error {
	if !s.hasFunction(ctx, "run_checks") {
		return nil
	}
	// One view per short transaction (refresh_views() would hold one snapshot
	// across all of them).
	rows, err := s.work.Query(ctx, `SELECT view_name FROM webhooks.view_refreshes ORDER BY view_name`)
	if err != nil {
		return fmt.Errorf("refresh views: %w", err)
	}
	views, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("refresh views: %w", err)
	}
	for _, v := range views {
		if _, err := s.work.Exec(ctx, `SELECT webhooks.refresh_view($1)`, v); err != nil {
			return fmt.Errorf("refresh view %s: %w", v, err)
		}
	}
	if _, err := s.work.Exec(ctx, `SELECT count(*) FROM webhooks.run_checks()`); err != nil {
		return fmt.Errorf("run checks: %w", err)
	}
	return nil
}

func (s *Server) hasFunction(ctx context.Context, name string) bool {
	var ok bool
	err := s.work.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_proc WHERE proname = $1 AND pronamespace = 'webhooks'::regnamespace)`, name).Scan(&ok)
	return err == nil && ok
}
