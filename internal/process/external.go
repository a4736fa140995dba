package process

import (
	"context"
	"time"

	"github.com/pginbox/pginbox/internal/tracing"
)

// external runs the claimed events of a handler whose effects live outside
// the database (http:): each event runs outside any transaction and is
// completed, or failed, in a short transaction of its own right after.
type external struct{ *Workers }

var _ leaseStrategy = external{}

// handle returns how many events it dealt with (the rest are released).
func (w external) handle(ctx, hctx context.Context, b *batch) (int, error) {
	log, name, batch, st := b.log, b.worker, b.events, b.st
	for i, ev := range batch {
		if ctx.Err() != nil {
			return i, nil
		}
		st.start(i)
		rctx, span := w.startRun(hctx, ev, ev.Attempt, modeExternal)
		herr := w.safeHandle(rctx, nil, ev)
		if herr != nil && hctx.Err() != nil {
			tracing.EndProcess(span, herr, time.Time{})
			return len(batch), nil
		}
		var status *string
		var err error
		bctx, cancel := bounded(rctx)
		if herr == nil {
			var ok bool
			err = w.Pool.QueryRow(bctx, `SELECT webhooks.complete($1, $2, $3)`, ev.ID, name, ev.Attempt).Scan(&ok)
			switch {
			case err != nil:
			case ok:
				w.Metrics.Completed.Inc()
			default:
				w.Metrics.LostLeases.Inc()
			}
		} else {
			err = w.Pool.QueryRow(bctx, `SELECT webhooks.fail($1, $2, $3, $4)`, ev.ID, name, ev.Attempt, herr.Error()).Scan(&status)
			if err == nil && status != nil {
				w.Metrics.Failed.WithLabelValues(*status).Inc()
				log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", *status, "error", herr)
			} else if err == nil {
				w.Metrics.LostLeases.Inc()
			}
		}
		cancel()
		tracing.EndProcess(span, herr, time.Time{})
		if err != nil {
			// The event may still be this worker's; it is taken back (and
			// run again) before the next claim. An ordered sequence's next
			// event is not claimable until then.
			b.leftLeases = true
			log.Warn("recording the outcome failed; the worker takes the event back before its next claim", "event", ev.ID, "error", err)
		}
	}
	return len(batch), nil
}
