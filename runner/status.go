package runner

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/backfill"
)

// statusPage is the JSON of GET /api/status and the data of the status page.
// A section whose query fails is left empty and named in Errors.
type statusPage struct {
	Time          time.Time        `json:"time"`
	Queue         map[string]int64 `json:"queue"`
	OldestPending float64          `json:"oldest_pending_seconds"`
	Checks        []checkStatus    `json:"checks"`
	Breaches      int              `json:"breaches"`
	Families      []string         `json:"families"`
	Traffic       []trafficBucket  `json:"traffic"`
	Gaps          []backfill.Gap   `json:"gaps"`
	Tombstones    []tombstoneRow   `json:"tombstones"`
	Dead          []deadEvent      `json:"dead"`
	LastReconcile *reconcileRun    `json:"last_reconcile"`
	Errors        []string         `json:"errors,omitempty"`
}

// checkStatus is one anomaly check with its latest result.
type checkStatus struct {
	Name        string     `json:"name"`
	Family      string     `json:"family"`
	Description string     `json:"description"`
	Value       *float64   `json:"value"`
	MinOK       *float64   `json:"min_ok"`
	MaxOK       *float64   `json:"max_ok"`
	Enabled     bool       `json:"enabled"`
	OK          *bool      `json:"ok"` // nil: never ran
	RunAt       *time.Time `json:"run_at"`
	Error       *string    `json:"error"`
}

// trafficBucket is one 5-minute bucket of the last hour, all providers.
type trafficBucket struct {
	Bucket    time.Time `json:"bucket"`
	Received  int64     `json:"received"`
	Processed int64     `json:"processed"`
	Dead      int64     `json:"dead"`
	WaitP50   *float64  `json:"wait_p50_s"`
	WaitP99   *float64  `json:"wait_p99_s"`
}

// tombstoneRow is an id known never to arrive.
type tombstoneRow struct {
	Provider   string    `json:"provider"`
	ExternalID string    `json:"external_id"`
	Reason     string    `json:"reason"`
	CreatedAt  time.Time `json:"created_at"`
}

// deadEvent is an event that used all its attempts.
type deadEvent struct {
	ID         int64     `json:"id"`
	Provider   string    `json:"provider"`
	ExternalID string    `json:"external_id"`
	EventType  string    `json:"event_type"`
	Attempts   int32     `json:"attempts"`
	LastError  string    `json:"last_error"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// reconcileRun is the latest reconciliation pass.
type reconcileRun struct {
	StartedAt time.Time `json:"started_at"`
	CountsRaw any       `json:"counts"`
}

var familyOrder = []string{"latency", "referential", "volume", "payload", "database"}

func (s *Server) statusRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/status", s.apiStatus)
	mux.HandleFunc("GET /{$}", s.dashboard)
	mux.HandleFunc("POST /actions/replay", s.replayAction)
}

// status gathers everything the page shows; each section is one short query.
func (s *Server) status(ctx context.Context) (*statusPage, error) {
	st := &statusPage{Time: time.Now().UTC(), Queue: map[string]int64{}, Families: familyOrder,
		Checks: []checkStatus{}, Traffic: []trafficBucket{}, Gaps: []backfill.Gap{}, Tombstones: []tombstoneRow{}, Dead: []deadEvent{}}
	q, err := readQueue(ctx, s.work)
	if err != nil {
		return nil, err // the database is unreachable: the whole status is
	}
	st.OldestPending = q.OldestPending
	st.Queue["pending"], st.Queue["processing"], st.Queue["dead"] = q.Pending, q.Processing, q.Dead

	section := func(name string, err error) {
		if err != nil {
			st.Errors = append(st.Errors, fmt.Sprintf("%s: %v", name, err))
		}
	}
	section("checks", collect(ctx, s, &st.Checks, `
		SELECT name, family, description, value::float8, min_ok::float8, max_ok::float8, enabled, ok, run_at, error
		FROM webhooks.check_status ORDER BY array_position($1::text[], family), name`, familyOrder))
	for _, c := range st.Checks {
		if c.Enabled && c.OK != nil && !*c.OK {
			st.Breaches++
		}
	}
	section("traffic", collect(ctx, s, &st.Traffic, `
		SELECT bucket, sum(received)::bigint, sum(processed)::bigint, sum(dead)::bigint, max(wait_p50_s)::float8, max(wait_p99_s)::float8
		FROM webhooks.traffic_5m WHERE bucket >= now() - interval '1 hour'
		GROUP BY bucket ORDER BY bucket`))
	section("gaps", collect(ctx, s, &st.Gaps, `SELECT provider, external_id, coalesce(status_url, ''), deadline FROM webhooks.find_gaps() ORDER BY deadline LIMIT 50`))
	section("tombstones", collect(ctx, s, &st.Tombstones, `SELECT provider, external_id, reason, created_at FROM webhooks.tombstones ORDER BY created_at DESC LIMIT 20`))
	section("dead", collect(ctx, s, &st.Dead, `
		SELECT id, provider, external_id, event_type, attempts, coalesce(last_error, ''), updated_at
		FROM webhooks.events WHERE status = 'dead' ORDER BY updated_at DESC LIMIT 50`))
	var run reconcileRun
	err = s.work.QueryRow(ctx, `SELECT started_at, counts FROM webhooks.reconcile_runs ORDER BY id DESC LIMIT 1`).Scan(&run.StartedAt, &run.CountsRaw)
	if err == nil {
		st.LastReconcile = &run
	} else if err != pgx.ErrNoRows {
		section("last_reconcile", err)
	}
	return st, nil
}

// collect scans every row of a query into *dst by position.
func collect[T any](ctx context.Context, s *Server, dst *[]T, sql string, args ...any) error {
	rows, err := s.work.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if err != nil {
		return err
	}
	*dst = out
	return nil
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.status(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, st)
}
