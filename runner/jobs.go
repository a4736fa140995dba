package runner

import (
	"context"
	"fmt"
)

// addJobs registers the scheduled jobs whose SQL exists in this schema
// version: reconciliation, and view refresh plus anomaly checks.
func (s *Server) addJobs() {
	s.jobs["reconcile"] = NewJob("reconcile", s.cfg.ReconcileEvery, s.reconcile)
	s.jobs["checks"] = NewJob("checks", s.cfg.ChecksEvery, s.checks)
}

// reconcile runs one pass of webhooks.reconcile() (which skips itself when
// another pass holds its lock) and, after scheduled passes, backfills.
func (s *Server) reconcile(ctx context.Context, trigger string) error {
	if !s.hasFunction(ctx, "reconcile") {
		return nil
	}
	var out []byte
	if err := s.work.QueryRow(ctx, `SELECT webhooks.reconcile()`).Scan(&out); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	s.log.Info("reconcile pass", "trigger", trigger, "result", string(out))
	return nil
}

// checks refreshes the views and evaluates the anomaly checks.
func (s *Server) checks(ctx context.Context, _ string) error {
	if !s.hasFunction(ctx, "run_checks") {
		return nil
	}
	if _, err := s.work.Exec(ctx, `SELECT webhooks.refresh_views()`); err != nil {
		return fmt.Errorf("refresh views: %w", err)
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
