package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventRow is one event of the list (GET /api/events).
type eventRow struct {
	ID          int64      `json:"id"`
	Provider    string     `json:"provider"`
	ExternalID  string     `json:"external_id"`
	EventType   string     `json:"event_type"`
	Status      string     `json:"status"`
	Source      string     `json:"source"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	Attempts    int32      `json:"attempts"`
	MaxAttempts int32      `json:"max_attempts"`
	LastError   *string    `json:"last_error"`
}

const eventCols = "e.id, e.provider, e.external_id, e.event_type, e.status, e.source, e.received_at, e.processed_at, e.attempts, e.max_attempts, e.last_error"

// eventList is the JSON of GET /api/events.
type eventList struct {
	Events     []eventRow       `json:"events"`
	NextCursor *string          `json:"next_cursor"`
	Counts     map[string]int64 `json:"counts"`
	CountCap   int              `json:"counts_capped_at"`
	Paused     []pausedProvider `json:"paused"`
	Limit      int              `json:"limit"`
	Window     *[2]*time.Time   `json:"payload_window,omitempty"`
}

// pausedProvider is a row of webhooks.paused_providers.
type pausedProvider struct {
	Provider string    `json:"provider"`
	Reason   string    `json:"reason"`
	PausedAt time.Time `json:"paused_at"`
	PausedBy string    `json:"paused_by"`
}

// listRequest is a parsed GET /events or /api/events.
type listRequest struct {
	Filter eventsFilter
	Limit  int
	After  *cursor // keyset: events older than this one
}

func parseList(r *http.Request) (listRequest, error) {
	q := r.URL.Query()
	lr := listRequest{Limit: defaultListLimit}
	var err error
	if lr.Filter, err = parseFilter(q); err != nil {
		return lr, err
	}
	if v := strings.TrimSpace(q.Get("limit")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return lr, badFilter("limit: %q is not a number from 1 to %d", v, maxListLimit)
		}
		lr.Limit = n
	}
	if v := strings.TrimSpace(q.Get("cursor")); v != "" {
		if lr.After, err = decodeCursor(v); err != nil {
			return lr, err
		}
	}
	return lr, nil
}

// listEvents runs the page query, the capped counts and the paused list.
func (s *Server) listEvents(ctx context.Context, lr listRequest) (*eventList, error) {
	now := time.Now()
	out := &eventList{Events: []eventRow{}, Counts: map[string]int64{}, CountCap: countCap, Limit: lr.Limit, Paused: []pausedProvider{}}
	var args []any
	q := lr.Filter.listSQL(eventCols, lr.After, lr.Limit+1, now, &args)
	rows, err := s.console.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	if out.Events, err = pgx.CollectRows(rows, pgx.RowToStructByPos[eventRow]); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	if len(out.Events) > lr.Limit {
		out.Events = out.Events[:lr.Limit]
		last := out.Events[len(out.Events)-1]
		c := encodeCursor(last.ReceivedAt, last.ID)
		out.NextCursor = &c
	}
	// Counts per status, each capped: one index range scan per status.
	args = args[:0]
	rows, err = s.console.Query(ctx, lr.Filter.countSQL(now, &args), args...)
	if err != nil {
		return nil, fmt.Errorf("count events: %w", err)
	}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count events: %w", err)
		}
		out.Counts[st] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count events: %w", err)
	}
	if out.Paused, err = s.paused(ctx); err != nil {
		return nil, err
	}
	if len(lr.Filter.Payload) > 0 {
		since, until := lr.Filter.window(now)
		out.Window = &[2]*time.Time{since, until}
	}
	return out, nil
}

func (s *Server) paused(ctx context.Context) ([]pausedProvider, error) {
	rows, err := s.console.Query(ctx, `SELECT provider, reason, paused_at, paused_by FROM webhooks.paused_providers ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("paused providers: %w", err)
	}
	p, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pausedProvider])
	if err != nil {
		return nil, fmt.Errorf("paused providers: %w", err)
	}
	return p, nil
}

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	lr, err := parseList(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	out, err := s.listEvents(ctx, lr)
	if err != nil {
		s.log.Warn("console: list events", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// eventDetail is the JSON of GET /api/events/{id}.
type eventDetail struct {
	eventRow
	Payload     json.RawMessage `json:"payload"`
	Errors      []eventError    `json:"errors"`
	Replays     []replayRow     `json:"replays"`
	Timeline    []timelineEntry `json:"timeline"`
	ClaimedAt   *time.Time      `json:"claimed_at"`
	LockedBy    *string         `json:"locked_by"`
	RunAfter    time.Time       `json:"run_after"`
	Revision    int32           `json:"revision"`
	Paused      bool            `json:"provider_paused"`
	PrunedAt    *time.Time      `json:"payload_pruned_at"`
	PrettyJSON  string          `json:"-"`
	CanReplay   bool            `json:"-"`
	ReplayBlock string          `json:"-"`
}

type eventError struct {
	Attempt int32     `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

type replayRow struct {
	At               time.Time `json:"at"`
	Reason           string    `json:"reason"`
	By               string    `json:"by"`
	PreviousStatus   string    `json:"previous_status"`
	PreviousAttempts int32     `json:"previous_attempts"`
}

// timelineEntry is one line of an event's timeline. At is null for an
// attempt whose time nothing recorded; Attempt is 0 for lines that are not
// an attempt (received, replayed).
type timelineEntry struct {
	At      *time.Time `json:"at"`
	What    string     `json:"what"`
	Detail  string     `json:"detail,omitempty"`
	Attempt int32      `json:"attempt,omitempty"`
	Kind    string     `json:"kind"` // received, claimed, failed, unrecorded, replayed, processed
}

var errNoEvent = errors.New("no such event")

func (s *Server) eventDetail(ctx context.Context, id int64) (*eventDetail, error) {
	d := &eventDetail{Errors: []eventError{}, Replays: []replayRow{}}
	var payload []byte
	err := s.console.QueryRow(ctx, `SELECT `+eventCols+`, e.payload, e.claimed_at, e.locked_by, e.run_after, e.revision, e.payload_pruned_at,
			EXISTS (SELECT 1 FROM webhooks.paused_providers AS p WHERE p.provider = e.provider)
		FROM webhooks.events AS e WHERE e.id = $1`, id).Scan(
		&d.ID, &d.Provider, &d.ExternalID, &d.EventType, &d.Status, &d.Source, &d.ReceivedAt, &d.ProcessedAt, &d.Attempts,
		&d.MaxAttempts, &d.LastError, &payload, &d.ClaimedAt, &d.LockedBy, &d.RunAfter, &d.Revision, &d.PrunedAt, &d.Paused)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoEvent
	}
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", id, err)
	}
	d.Payload = payload
	rows, err := s.console.Query(ctx, `SELECT attempt, at, error FROM webhooks.event_errors WHERE event_id = $1 ORDER BY seq LIMIT 1000`, id)
	if err != nil {
		return nil, fmt.Errorf("event %d errors: %w", id, err)
	}
	if d.Errors, err = pgx.CollectRows(rows, pgx.RowToStructByPos[eventError]); err != nil {
		return nil, fmt.Errorf("event %d errors: %w", id, err)
	}
	rows, err = s.console.Query(ctx, `SELECT replayed_at, reason, replayed_by, previous_status, previous_attempts FROM webhooks.replays WHERE event_id = $1 ORDER BY id LIMIT 1000`, id)
	if err != nil {
		return nil, fmt.Errorf("event %d replays: %w", id, err)
	}
	if d.Replays, err = pgx.CollectRows(rows, pgx.RowToStructByPos[replayRow]); err != nil {
		return nil, fmt.Errorf("event %d replays: %w", id, err)
	}
	d.Timeline = buildTimeline(d)
	return d, nil
}

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

func failedEntry(e eventError) timelineEntry {
	return timelineEntry{At: &e.At, What: fmt.Sprintf("attempt %d failed", e.Attempt), Detail: e.Error, Attempt: e.Attempt, Kind: "failed"}
}

func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the event id must be a positive number"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d, err := s.eventDetail(ctx, id)
	switch {
	case errors.Is(err, errNoEvent):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no event " + strconv.FormatInt(id, 10)})
	case err != nil:
		s.log.Warn("console: event detail", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
	default:
		writeJSON(w, http.StatusOK, d)
	}
}
