package runner

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox"
)

// healthz answers 200 while the process is up.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the database is reachable, takes writes (not a
// standby, not read-only) and is migrated to at least the migrations this
// binary embeds, 503 otherwise. Its body is a fixed word on both listeners:
// the reason (a pgx error names the user, database, host and port) goes to
// the log. Every caller shares one check in flight (readiness), so a flood
// of probes holds at most one of the workers' connections.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.readiness.check(r.Context(), func(ctx context.Context) error {
		return checkSchema(ctx, s.work, s.schemaVersion)
	}, s.log); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// readiness runs one readiness check at a time and hands its answer to
// every caller that asked while it ran: a flood of /readyz costs one
// connection and one check in flight, however many callers there are.
type readiness struct {
	mu       sync.Mutex
	inflight *readyCall
	// lastLog and lastReason rate-limit the log of a failing check.
	lastLog    time.Time
	lastReason string
}

// readyCall is one check in flight; done closes when err is set.
type readyCall struct {
	done   chan struct{}
	err    error
	logged sync.Once
}

// check joins the check in flight, or starts one with fn (under its own
// timeout, not the caller's: the answer is shared), and returns its error
// or ctx's. A failure is logged when its reason changes, else at most once
// every 10 s.
func (p *readiness) check(ctx context.Context, fn func(context.Context) error, log *slog.Logger) error {
	p.mu.Lock()
	c := p.inflight
	if c == nil {
		c = &readyCall{done: make(chan struct{})}
		p.inflight = c
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			err := fn(cctx)
			cancel()
			p.mu.Lock()
			c.err = err
			p.inflight = nil
			p.mu.Unlock()
			close(c.done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Logged by a caller, not the check's goroutine: nothing is logged
	// once the server has stopped answering.
	if c.err != nil {
		c.logged.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if reason := c.err.Error(); reason != p.lastReason || time.Since(p.lastLog) > 10*time.Second {
				p.lastReason, p.lastLog = reason, time.Now()
				log.Warn("not ready", "error", c.err)
			}
		})
	}
	return c.err
}

// schemaError says the database is reachable but not (fully) migrated.
type schemaError struct{ Have, Want int64 }

// Error says how far the schema is and what to run.
func (e *schemaError) Error() string {
	if e.Have == 0 {
		return "schema webhooks is not migrated (run pginbox migrate)"
	}
	return "schema webhooks is at version " + strconv.FormatInt(e.Have, 10) + ", this binary needs " + strconv.FormatInt(e.Want, 10) + " (run pginbox migrate)"
}

// errReadOnly says the server reached does not take writes.
var errReadOnly = errors.New("the database server does not take writes (a standby in recovery, or read-only)")

// checkSchema verifies the database answers, takes writes and carries every
// migration up to version want.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, want int64) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var readOnly bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::boolean`).Scan(&readOnly); err != nil {
		return err
	}
	if readOnly {
		// Drop the connection, so the next check connects again — to the
		// server that takes writes, when the URL lists several.
		_ = conn.Conn().Close(ctx)
		return errReadOnly
	}
	have, err := pginbox.AppliedVersion(ctx, conn)
	if err != nil {
		return err
	}
	if have < want {
		return &schemaError{Have: have, Want: want}
	}
	return nil
}

// latestVersion returns the version of the newest embedded migration
// ([pginbox.LatestVersion]).
func latestVersion() (int64, error) {
	return pginbox.LatestVersion()
}
