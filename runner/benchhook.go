package runner

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/benchhook"
	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/notify"
	"github.com/pginbox/pginbox/internal/process"
)

// The bench measures the notifier and the event-by-event sql: path on their
// own; internal/benchhook hands them to it without exporting them here.
func init() {
	benchhook.Register(
		func(pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) benchhook.Notifier {
			return notify.NewNotifier(pool, interval, metrics.New(pool), log)
		},
		func(h any) any {
			if hh, ok := h.(Handler); ok {
				return process.PerEvent(hh)
			}
			return h
		})
}

func init() {
	benchhook.RegisterConsole(func(q url.Values) ([]benchhook.Query, error) {
		r := &http.Request{URL: &url.URL{RawQuery: q.Encode()}}
		lr, err := parseList(r)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		var args []any
		page := lr.Filter.listSQL(eventCols, lr.After, lr.Limit+1, now, &args)
		var cargs []any
		counts := lr.Filter.countSQL(now, &cargs)
		return []benchhook.Query{{Name: "page", SQL: page, Args: args}, {Name: "counts", SQL: counts, Args: cargs}}, nil
	})
}
