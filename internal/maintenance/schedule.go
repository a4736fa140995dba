package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/pginbox/pginbox/internal/metrics"
)

// job is work the runner repeats on a schedule and on demand.
type job struct {
	// Name labels logs and metrics.
	Name string
	// Every is the period; zero or negative runs the job only when triggered.
	Every time.Duration
	// Run does one pass.
	Run func(ctx context.Context, trigger string) error
	// NotifyGap is the least time between the starts of two passes
	// triggered by a notification (why "notify"): anyone who can connect
	// can NOTIFY, so a storm of them must not run passes back to back.
	// Scheduled passes and other triggers are not held. Zero: no bound.
	NotifyGap time.Duration

	trigger chan string
}

// newJob returns a job ready for [job.Trigger] and [job.Loop].
func newJob(name string, every time.Duration, run func(ctx context.Context, trigger string) error) *job {
	return &job{Name: name, Every: every, Run: run, trigger: make(chan string, 1)}
}

// Trigger asks for a pass now. A trigger that arrives while a pass is
// running queues at most one more pass after it: passes never overlap, and a
// burst of signals costs one extra pass.
func (j *job) Trigger(why string) {
	select {
	case j.trigger <- why:
	default:
	}
}

// Loop runs the job until ctx ends: every Every (the first time after one
// period) and whenever triggered.
func (j *job) Loop(ctx context.Context, m *metrics.Set, log *slog.Logger) {
	var tick <-chan time.Time
	if j.Every > 0 {
		t := time.NewTicker(j.Every)
		defer t.Stop()
		tick = t.C
	}
	var lastNotified time.Time
	for {
		why := "schedule"
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case why = <-j.trigger:
			if why == "notify" && !j.holdNotified(ctx, lastNotified) {
				return
			}
		}
		if why == "notify" {
			lastNotified = time.Now()
		}
		start := time.Now()
		err := j.Run(ctx, why)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			m.ScheduledRuns.WithLabelValues(j.Name, "error").Inc()
			log.Warn("scheduled job failed", "job", j.Name, "trigger", why, "error", err)
		default:
			m.ScheduledRuns.WithLabelValues(j.Name, "ok").Inc()
			log.Debug("scheduled job done", "job", j.Name, "trigger", why, "took", time.Since(start))
		}
	}
}

// holdNotified waits until NotifyGap has passed since the last notified
// pass started (notifications arriving meanwhile coalesce into the one
// queued pass): false when ctx ends first.
func (j *job) holdNotified(ctx context.Context, last time.Time) bool {
	wait := j.NotifyGap - time.Since(last)
	if j.NotifyGap <= 0 || wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
