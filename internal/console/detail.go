package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/console/format"
)

// eventDetail is the JSON of GET /api/events/{id}.
type eventDetail struct {
	eventRow
	Payload   json.RawMessage `json:"payload"`
	Errors    []eventError    `json:"errors"`
	Replays   []replayRow     `json:"replays"`
	Timeline  []timelineEntry `json:"timeline"`
	ClaimedAt *time.Time      `json:"claimed_at"`
	LockedBy  *string         `json:"locked_by"`
	RunAfter  time.Time       `json:"run_after"`
	Revision  int32           `json:"revision"`
	Paused    bool            `json:"provider_paused"`
	PrunedAt  *time.Time      `json:"payload_pruned_at"`
	// OrderKey is the event's sequence when its provider is ordered;
	// OrderHeld says it waits for an earlier event of it; SequenceHead is
	// the event that sequence waits on when that is another one.
	OrderKey     *string `json:"order_key"`
	OrderHeld    bool    `json:"order_held"`
	OutOfOrder   bool    `json:"out_of_order"`
	SequenceHead *int64  `json:"sequence_head_id"`
	PrettyJSON   string  `json:"-"`
	// NextRun is the page's word on when a pending event runs: "next run
	// in 3s", or who it waits for once it is due.
	NextRun     string `json:"-"`
	CanReplay   bool   `json:"-"`
	ReplayBlock string `json:"-"`
}

// eventError is a row of webhooks.event_errors: one failed attempt.
type eventError struct {
	Attempt int32     `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// replayRow is a row of webhooks.replays: one replay of the event.
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

// errNoEvent says the event id does not exist (or was pruned).
var errNoEvent = errors.New("no such event")

// eventDetailSQL reads one event by id from one of the two tables behind
// webhooks.events (%s): the queue, webhooks.inbox, first, one probe of its
// primary key; then webhooks.history, whose day slices are partitioned by
// received_at, not id, so an id there costs one probe of the id index of
// each slice (an operator's click, a cold path).
const eventDetailSQL = `SELECT ` + eventCols + `, e.payload, e.claimed_at, e.locked_by, e.run_after, e.revision, e.payload_pruned_at,
		EXISTS (SELECT 1 FROM webhooks.paused_providers AS p WHERE p.provider = e.provider),
		e.order_key, e.order_held, e.out_of_order
	FROM %s AS e WHERE e.id = $1`

// eventDetail reads one event with its errors, replays and timeline.
func (c *Console) eventDetail(ctx context.Context, id int64) (*eventDetail, error) {
	d := &eventDetail{Errors: []eventError{}, Replays: []replayRow{}}
	var payload []byte
	var err error
	for _, table := range []string{"webhooks.inbox", "webhooks.history"} {
		err = c.pool.QueryRow(ctx, fmt.Sprintf(eventDetailSQL, table), id).Scan(
			&d.ID, &d.Provider, &d.ExternalID, &d.EventType, &d.Status, &d.Source, &d.ReceivedAt, &d.ProcessedAt, &d.Attempts,
			&d.MaxAttempts, &d.LastError, &payload, &d.ClaimedAt, &d.LockedBy, &d.RunAfter, &d.Revision, &d.PrunedAt, &d.Paused,
			&d.OrderKey, &d.OrderHeld, &d.OutOfOrder)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoEvent
	}
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", id, err)
	}
	d.Payload = payload
	if d.OrderKey != nil && d.Status != "processed" {
		if d.SequenceHead, err = c.sequenceHead(ctx, d.Provider, *d.OrderKey); err != nil {
			return nil, fmt.Errorf("event %d sequence: %w", id, err)
		}
		if d.SequenceHead != nil && *d.SequenceHead == d.ID {
			d.SequenceHead = nil
		}
	}
	rows, err := c.pool.Query(ctx, `SELECT attempt, at, error FROM webhooks.event_errors WHERE event_id = $1 ORDER BY seq LIMIT 1000`, id)
	if err != nil {
		return nil, fmt.Errorf("event %d errors: %w", id, err)
	}
	if d.Errors, err = pgx.CollectRows(rows, pgx.RowToStructByPos[eventError]); err != nil {
		return nil, fmt.Errorf("event %d errors: %w", id, err)
	}
	rows, err = c.pool.Query(ctx, `SELECT replayed_at, reason, replayed_by, previous_status, previous_attempts FROM webhooks.replays WHERE event_id = $1 ORDER BY id LIMIT 1000`, id)
	if err != nil {
		return nil, fmt.Errorf("event %d replays: %w", id, err)
	}
	if d.Replays, err = pgx.CollectRows(rows, pgx.RowToStructByPos[replayRow]); err != nil {
		return nil, fmt.Errorf("event %d replays: %w", id, err)
	}
	d.Timeline = buildTimeline(d)
	if d.Status == "pending" {
		d.NextRun = c.nextRun(d)
	}
	return d, nil
}

// apiEvent is GET /api/events/{id}.
func (c *Console) apiEvent(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the event id must be a positive number"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d, err := c.eventDetail(ctx, id)
	switch {
	case errors.Is(err, errNoEvent):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no event " + strconv.FormatInt(id, 10)})
	case err != nil:
		c.log.Warn("console: event detail", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
	default:
		writeJSON(w, http.StatusOK, d)
	}
}

// sequenceHead returns the head of a sequence: its first event, in order,
// that is not processed (a dead one only while its provider's dead_blocks),
// read through events_order_idx; nil when it has none.
func (c *Console) sequenceHead(ctx context.Context, provider, key string) (*int64, error) {
	var id int64
	err := c.pool.QueryRow(ctx, sequenceHeadSQL, provider, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// nextRun says when a pending event runs: "next run in 3s" while its
// backoff lasts; once it is due, who it waits for. An ordered event held
// behind its sequence's head waits for that event, not for a worker (the
// workers skip it, however many run): "held: waits on #15". An event never
// claimed on a runner without a handler (PGINBOX_HANDLER=none) waits for a
// worker that may not exist: the page says so instead of "next run 10.8s
// ago".
func (c *Console) nextRun(d *eventDetail) string {
	due := c.now().Sub(d.RunAfter)
	switch {
	case d.SequenceHead != nil:
		return "held: waits on #" + strconv.FormatInt(*d.SequenceHead, 10)
	case d.OrderHeld:
		return "held: waits on an earlier event of its sequence"
	case due < 0:
		return "next run in " + format.Duration(-due)
	case c.cfg.NoHandler && d.ClaimedAt == nil:
		return "waiting for a worker: PGINBOX_HANDLER=none"
	case d.Paused:
		return "due, provider paused"
	}
	return "due " + format.Duration(due) + " ago, waiting for a worker"
}
