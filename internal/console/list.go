package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/console/filter"
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

// eventCols are the columns of an eventRow, in its order.
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

// listEvents runs the page query, the capped counts and the paused list.
func (c *Console) listEvents(ctx context.Context, lr filter.List) (*eventList, error) {
	now := c.now()
	out := &eventList{Events: []eventRow{}, Counts: map[string]int64{}, CountCap: filter.CountCap, Limit: lr.Limit, Paused: []pausedProvider{}}
	var args []any
	q := lr.Filter.ListSQL(eventCols, lr.After, lr.Limit+1, now, &args)
	rows, err := c.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	if out.Events, err = pgx.CollectRows(rows, pgx.RowToStructByPos[eventRow]); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	if len(out.Events) > lr.Limit {
		out.Events = out.Events[:lr.Limit]
		last := out.Events[len(out.Events)-1]
		c := filter.EncodeCursor(last.ReceivedAt, last.ID)
		out.NextCursor = &c
	}
	// Counts per status, each capped: one index range scan per status.
	args = args[:0]
	rows, err = c.pool.Query(ctx, lr.Filter.CountSQL(now, &args), args...)
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
	if out.Paused, err = c.paused(ctx); err != nil {
		return nil, err
	}
	if len(lr.Filter.Payload) > 0 {
		since, until := lr.Filter.Window(now)
		out.Window = &[2]*time.Time{since, until}
	}
	return out, nil
}

// paused lists the paused providers.
func (c *Console) paused(ctx context.Context) ([]pausedProvider, error) {
	rows, err := c.pool.Query(ctx, `SELECT provider, reason, paused_at, paused_by FROM webhooks.paused_providers ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("paused providers: %w", err)
	}
	p, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pausedProvider])
	if err != nil {
		return nil, fmt.Errorf("paused providers: %w", err)
	}
	return p, nil
}

// apiEvents is GET /api/events.
func (c *Console) apiEvents(w http.ResponseWriter, r *http.Request) {
	lr, err := filter.ParseList(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	out, err := c.listEvents(ctx, lr)
	var fe *filter.Error
	if errors.As(filter.Refused(err), &fe) {
		c.log.Debug("console: list events: a filter value refused", "error", err)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fe.Error()})
		return
	}
	if err != nil {
		c.log.Warn("console: list events", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, out)
}
