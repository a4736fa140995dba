// Package benchhook is the bench's one door into the runner: the two parts
// the bench measures on their own, which package runner does not export.
// Package runner fills it in at init, so a program that imports runner (the
// bench does) can use it; nothing outside this module can import it.
package benchhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Notifier is the runner's coalescing NOTIFY sender: however often Signal
// is called, Run sends at most one NOTIFY webhooks_events per interval, in a
// statement of its own.
type Notifier interface {
	// Signal asks for a NOTIFY soon; it never blocks.
	Signal()
	// Run sends the coalesced notifications until ctx ends.
	Run(ctx context.Context)
}

var (
	newNotifier func(pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) Notifier
	sqlPerEvent func(handler any) any
)

// Register is called by package runner's init with its implementations.
func Register(notifier func(pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) Notifier, perEvent func(handler any) any) {
	newNotifier, sqlPerEvent = notifier, perEvent
}

// NewNotifier returns the runner's notifier sending through pool.
func NewNotifier(pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) Notifier {
	return newNotifier(pool, interval, log)
}

// SQLPerEvent returns a copy of a sql: handler (from runner.ParseHandler)
// that the workers run event by event from Go — a savepoint, the function,
// complete() and a release per event — instead of one
// webhooks.process_batch() statement per batch. Any other handler is
// returned as it is.
func SQLPerEvent[H any](handler H) H {
	return sqlPerEvent(handler).(H)
}
