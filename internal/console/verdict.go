package console

import (
	"context"
	"fmt"
	"time"

	"github.com/pginbox/pginbox/internal/console/format"
)

// The verdicts of GET /api/status, in the order they are decided.
const (
	// verdictBreach: an enabled check's latest result is breached.
	verdictBreach = "breach"
	// verdictNoData: no check has run since the console started, so the
	// stored results (if any) say nothing about now.
	verdictNoData = "no_data"
	// verdictAttention: nothing breached, but events failed and wait for
	// their next attempt.
	verdictAttention = "attention"
	// verdictOK: the checks ran since start, none breached, nothing is
	// failing.
	verdictOK = "ok"
)

// verdictOf decides the overview's verdict. A breach wins over everything
// (a breach read from before the start is still a breach, and the page is
// red, never green); then no_data while no enabled check has run since
// started; then attention while events are failing.
func verdictOf(st *statusPage, started time.Time) string {
	if st.Breaches > 0 {
		return verdictBreach
	}
	ran := false
	for _, c := range st.Checks {
		if c.Enabled && c.RunAt != nil && !c.RunAt.Before(started) {
			ran = true
			break
		}
	}
	switch {
	case !ran:
		return verdictNoData
	case st.Retrying > 0:
		return verdictAttention
	}
	return verdictOK
}

// readRetrying counts the events that failed at least once and wait for
// their next attempt (pending with a last error: replay clears it), and
// the earliest time one of them runs again.
func (c *Console) readRetrying(ctx context.Context, st *statusPage) error {
	return c.pool.QueryRow(ctx, retryingSQL).Scan(&st.Retrying, &st.NextRetryAt)
}

// retryText is the overview's line about failing events: "2 events
// failing, next retry in 14s" (or "retrying now" once the earliest is due).
func retryText(n int64, next *time.Time, now time.Time) string {
	what := "1 event failing"
	if n != 1 {
		what = fmt.Sprintf("%d events failing", n)
	}
	if next == nil || !next.After(now) {
		return what + ", retrying now"
	}
	return what + ", next retry in " + format.Duration(next.Sub(now))
}
