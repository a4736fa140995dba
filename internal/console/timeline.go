package console

import (
	"fmt"
	"sort"
	"time"
)

// buildTimeline lists what is known of an event's life in order: its
// arrival; every attempt 1..attempts of each run (a replay ends a run and
// records how many attempts it had), each failure with its time and error,
// the current run's latest claim at claimed_at, and for an attempt with no
// recorded failure (a release at shutdown, a lease lost without fail(), a
// row older than the error log) a line saying so, with no time; each
// replay; its completion.
func buildTimeline(d *eventDetail) []timelineEntry {
	tl := []timelineEntry{{At: &d.ReceivedAt, What: "received", Detail: "from " + d.Source, Kind: "received"}}
	errs := d.Errors
	var runStart time.Time
	for i := 0; i <= len(d.Replays); i++ {
		current := i == len(d.Replays)
		// This run's failures: those before the replay that ended it.
		n := len(errs)
		if !current {
			n = sort.Search(len(errs), func(k int) bool { return !errs[k].At.Before(d.Replays[i].At) })
		}
		attempts := d.Attempts
		if !current {
			attempts = d.Replays[i].PreviousAttempts
		}
		var claimedAt *time.Time
		if current && d.ClaimedAt != nil && !d.ClaimedAt.Before(runStart) {
			claimedAt = d.ClaimedAt
		}
		tl = append(tl, runTimeline(d, errs[:n], attempts, claimedAt)...)
		errs = errs[n:]
		if !current {
			r := d.Replays[i]
			tl = append(tl, timelineEntry{At: &r.At, What: "replayed by " + r.By + " (was " + r.PreviousStatus + ")", Detail: r.Reason, Kind: "replayed"})
			runStart = r.At
		}
	}
	if d.ProcessedAt != nil {
		tl = append(tl, timelineEntry{At: d.ProcessedAt, What: fmt.Sprintf("attempt %d processed", d.Attempts), Attempt: d.Attempts, Kind: "processed"})
	}
	return tl
}

// runTimeline is one run's attempts 1..attempts: errs are its failures
// (oldest first), claimedAt the time of its last claim when known.
func runTimeline(d *eventDetail, errs []eventError, attempts int32, claimedAt *time.Time) []timelineEntry {
	var tl []timelineEntry
	byAttempt := map[int32][]eventError{}
	for _, e := range errs {
		byAttempt[e.Attempt] = append(byAttempt[e.Attempt], e)
	}
	for n := int32(1); n <= attempts; n++ {
		failed := byAttempt[n]
		delete(byAttempt, n)
		latest := n == attempts && claimedAt != nil
		switch {
		case latest && len(failed) == 0 && d.Status != "processing" && d.Status != "processed":
			tl = append(tl, timelineEntry{At: claimedAt, What: fmt.Sprintf("attempt %d: claimed; no failure recorded", n), Attempt: n, Kind: "unrecorded"})
		case latest:
			w := fmt.Sprintf("attempt %d claimed", n)
			if d.LockedBy != nil {
				w += " by " + *d.LockedBy
			}
			tl = append(tl, timelineEntry{At: claimedAt, What: w, Attempt: n, Kind: "claimed"})
		case len(failed) == 0:
			tl = append(tl, timelineEntry{What: fmt.Sprintf("attempt %d: claimed; no failure recorded", n), Attempt: n, Kind: "unrecorded"})
		}
		for _, e := range failed {
			tl = append(tl, failedEntry(e))
		}
	}
	// Failures numbered outside 1..attempts (not written by this version):
	// shown as recorded, in their order.
	for _, e := range errs {
		if _, left := byAttempt[e.Attempt]; left {
			tl = append(tl, failedEntry(e))
		}
	}
	return tl
}

// failedEntry is the timeline line of one failed attempt.
func failedEntry(e eventError) timelineEntry {
	return timelineEntry{At: &e.At, What: fmt.Sprintf("attempt %d failed", e.Attempt), Detail: e.Error, Attempt: e.Attempt, Kind: "failed"}
}
