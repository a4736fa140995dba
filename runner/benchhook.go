package runner

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/benchhook"
)

// The bench measures the notifier and the event-by-event sql: path on their
// own; internal/benchhook hands them to it without exporting them here.
func init() {
	benchhook.Register(
		func(pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) benchhook.Notifier {
			return newNotifier(pool, interval, newMetrics(pool), log)
		},
		func(h any) any {
			if s, ok := h.(*sqlHandler); ok {
				perEvent := *s
				perEvent.perEvent = true
				return &perEvent
			}
			return h
		})
}
