package runner

import (
	"context"
	"github.com/pginbox/pginbox/internal/metrics"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// notifier coalesces wake-ups for other runners: however many deliveries are
// stored, it sends at most one NOTIFY webhooks_events per Interval, after the
// deliveries committed and in a statement of its own, so ingest transactions
// never take NOTIFY's server-wide commit lock.
type notifier struct {
	Pool     *pgxpool.Pool
	Interval time.Duration
	Metrics  *metrics.Set
	Log      *slog.Logger
	pending  chan struct{}
}

// newNotifier returns a notifier; call Run to start it.
func newNotifier(pool *pgxpool.Pool, interval time.Duration, m *metrics.Set, log *slog.Logger) *notifier {
	return &notifier{Pool: pool, Interval: interval, Metrics: m, Log: log, pending: make(chan struct{}, 1)}
}

// Signal asks for a NOTIFY soon. It never blocks.
func (n *notifier) Signal() {
	select {
	case n.pending <- struct{}{}:
	default:
	}
}

// Run sends the coalesced notifications until ctx ends.
func (n *notifier) Run(ctx context.Context) {
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
