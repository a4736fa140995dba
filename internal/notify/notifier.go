// Package notify carries wake-ups between runners over Postgres
// LISTEN/NOTIFY: the [Notifier] sends one coalesced NOTIFY webhooks_events
// per interval after deliveries committed, and the [Listener] LISTENs on a
// direct connection, pings itself to detect a half-open one, and calls a
// function per channel.
package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
)

// Notifier coalesces wake-ups for other runners: however many deliveries are
// stored, it sends at most one NOTIFY webhooks_events per Interval, after the
// deliveries committed and in a statement of its own, so ingest transactions
// never take NOTIFY's server-wide commit lock.
type Notifier struct {
	// Pool sends the NOTIFYs.
	Pool *pgxpool.Pool
	// Interval is the least time between two NOTIFYs.
	Interval time.Duration
	// Metrics counts the NOTIFYs sent.
	Metrics *metrics.Set
	// Log receives failed sends.
	Log *slog.Logger

	pending chan struct{}
}

// NewNotifier returns a Notifier; call Run to start it.
func NewNotifier(pool *pgxpool.Pool, interval time.Duration, m *metrics.Set, log *slog.Logger) *Notifier {
	return &Notifier{Pool: pool, Interval: interval, Metrics: m, Log: log, pending: make(chan struct{}, 1)}
}

// Signal asks for a NOTIFY soon. It never blocks.
func (n *Notifier) Signal() {
	select {
	case n.pending <- struct{}{}:
	default:
	}
}

// Run sends the coalesced notifications until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.pending:
		}
		if wait := n.Interval - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := n.Pool.Exec(nctx, `SELECT pg_notify('webhooks_events', '')`)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				n.Log.Warn("coalesced notify failed; other runners fall back to polling", "error", err)
			}
			continue
		}
		n.Metrics.Notifies.Inc()
	}
}
