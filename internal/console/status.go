package console

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/status"
)

// statusPage is the JSON of GET /api/status and the data of the status page.
// A section whose query fails is left empty and named in Errors.
type statusPage struct {
	Time time.Time `json:"time"`
	// Verdict is breach, no_data, attention or ok (see verdictOf).
	Verdict string `json:"verdict"`
	// Retrying counts the events that failed at least once and wait for
	// their next attempt; NextRetryAt is the earliest of those attempts.
	Retrying      int64            `json:"retrying"`
	NextRetryAt   *time.Time       `json:"next_retry_at"`
	Queue         map[string]int64 `json:"queue"`
	OldestPending float64          `json:"oldest_pending_seconds"`
	Checks        []checkStatus    `json:"checks"`
	Breaches      int              `json:"breaches"`
	Families      []string         `json:"families"`
	Traffic       []trafficBucket  `json:"traffic"`
	Gaps          []status.Gap     `json:"gaps"`
	Tombstones    []tombstoneRow   `json:"tombstones"`
	Dead          []deadEvent      `json:"dead"`
	LastReconcile *reconcileRun    `json:"last_reconcile"`
	ByProvider    []providerQueue  `json:"by_provider"`
	Traffic24h    []trafficBucket  `json:"traffic_24h"`
	Window1h      trafficSummary   `json:"last_hour"`
	Window24h     trafficSummary   `json:"last_24h"`
	Backfills     []backfillRow    `json:"recent_backfills"`
	Backfill      []backfillState  `json:"backfill"`
	PausedList    []pausedProvider `json:"paused"`
	// Ordering is every ordered provider with its settings and counts, and
	// its longest-blocked sequences (the head event each waits on).
	Ordering status.Ordering `json:"ordering"`
	Errors   []string        `json:"errors,omitempty"`
}

// providerQueue is one provider's unfinished events.
type providerQueue struct {
	Provider   string `json:"provider"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Dead       int64  `json:"dead"`
}

// trafficSummary sums a window of traffic_5m: p50 is the median of the
// 5-minute medians, p99 the worst 5-minute p99.
type trafficSummary struct {
	Received  int64    `json:"received"`
	Processed int64    `json:"processed"`
	Dead      int64    `json:"dead"`
	WaitP50   *float64 `json:"wait_p50_s"`
	WaitP99   *float64 `json:"wait_p99_s"`
}

// backfillRow is an event backfill stored recently.
type backfillRow struct {
	ID         int64     `json:"id"`
	Provider   string    `json:"provider"`
	ExternalID string    `json:"external_id"`
	EventType  string    `json:"event_type"`
	ReceivedAt time.Time `json:"received_at"`
}

// backfillState is one provider's event-log backfill, from its row of
// webhooks.backfill_checkpoints. LastCompleteAt is null while no pass has
// read the log completely (the first pass was cut short).
type backfillState struct {
	Provider             string     `json:"provider"`
	ReadUntil            time.Time  `json:"read_until"`
	CheckpointAgeSeconds float64    `json:"checkpoint_age_seconds"`
	LastCompleteAt       *time.Time `json:"last_complete_pass_at"`
	LastPassAt           time.Time  `json:"last_pass_at"`
	LastListed           int64      `json:"last_listed"`
	LastRecovered        int64      `json:"last_recovered"`
	ListedTotal          int64      `json:"listed_total"`
	RecoveredTotal       int64      `json:"recovered_total"`
	LastError            *string    `json:"last_error"`
}

// checkStatus is one anomaly check with its latest result. MinOK and MaxOK
// are its fixed range; a learned check's latest result was judged against
// the band in LearnedMinOK / LearnedMaxOK instead (RangeSource "learned"), or
// against the fixed range while its history was short ("fallback").
type checkStatus struct {
	Name         string     `json:"name"`
	Family       string     `json:"family"`
	Description  string     `json:"description"`
	Value        *float64   `json:"value"`
	MinOK        *float64   `json:"min_ok"`
	MaxOK        *float64   `json:"max_ok"`
	Enabled      bool       `json:"enabled"`
	OK           *bool      `json:"ok"` // nil: never ran
	RunAt        *time.Time `json:"run_at"`
	Error        *string    `json:"error"`
	RangeMode    string     `json:"range_mode"`     // fixed or learned
	RangeSource  *string    `json:"range_source"`   // fixed, learned or fallback; nil: never ran
	LearnedMinOK *float64   `json:"learned_min_ok"` // set when RangeSource is learned
	LearnedMaxOK *float64   `json:"learned_max_ok"`
	HistoryWeeks *int32     `json:"history_weeks"` // learned checks: weeks of history in the latest result
	// Remedy is what to do when the check fires (webhooks.checks.remedy,
	// written by the check's source); empty when none was written.
	Remedy string `json:"remedy"`
}

// Learned reports whether the latest result was judged against a band
// learned from the check's history.
func (c checkStatus) Learned() bool { return c.RangeSource != nil && *c.RangeSource == "learned" }

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

// orderingShown is how many blocked sequences the status lists (the
// longest-blocked; the counts per provider cover all of them).
const orderingShown = 20

// familyOrder is the order the check families are shown in.
var familyOrder = []string{"latency", "referential", "volume", "payload", "database"}

// statusTTL is how long one gathered status serves every request: a flood
// of GET / runs its queries at most once per statusTTL.
const statusTTL = 2 * time.Second

// statusCache holds the last status; one request at a time gathers it.
type statusCache struct {
	mu  sync.Mutex
	at  time.Time
	val *statusPage
}

// invalidate drops the cached status (after an action changed it).
func (c *statusCache) invalidate() {
	c.mu.Lock()
	c.val = nil
	c.mu.Unlock()
}

// status returns the cached status, gathering it when older than statusTTL.
// Concurrent callers wait for the one gathering it instead of each querying.
func (c *Console) status(ctx context.Context) (*statusPage, error) {
	sc := &c.cache
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.val != nil && c.now().Sub(sc.at) < statusTTL {
		return sc.val, nil
	}
	st, err := c.gatherStatus(ctx)
	if err != nil {
		return nil, err
	}
	sc.val, sc.at = st, c.now()
	return st, nil
}

// gatherStatus reads everything the page shows on the console's own pool;
// each section is one short query.
func (c *Console) gatherStatus(ctx context.Context) (*statusPage, error) {
	st := &statusPage{Time: c.now().UTC(), Queue: map[string]int64{}, Families: familyOrder,
		Checks: []checkStatus{}, Traffic: []trafficBucket{}, Gaps: []status.Gap{}, Tombstones: []tombstoneRow{}, Dead: []deadEvent{},
		ByProvider: []providerQueue{}, Traffic24h: []trafficBucket{}, Backfills: []backfillRow{}, Backfill: []backfillState{},
		PausedList: []pausedProvider{}, Ordering: status.Ordering{Providers: []status.OrderedProvider{}, Blocked: []status.Sequence{}}}
	q, err := status.ReadQueue(ctx, c.pool)
	if err != nil {
		c.log.Warn("status: database unavailable", "error", err)
		return nil, err // the database is unreachable: the whole status is
	}
	st.OldestPending = q.OldestPending
	st.Queue["pending"], st.Queue["processing"], st.Queue["dead"] = q.Pending, q.Processing, q.Dead

	section := func(name string, err error) {
		if err != nil {
			// The page and /api/status name the section only: database
			// errors can carry payload fragments and schema details.
			c.log.Warn("status section unavailable", "section", name, "error", err)
			st.Errors = append(st.Errors, name+": unavailable")
		}
	}
	// The latest result's range (check_results, by its primary key) is the
	// one the value was judged against: a learned check's band.
	section("checks", collect(ctx, c, &st.Checks, `
		SELECT s.name, s.family, s.description, s.value::float8, s.min_ok::float8, s.max_ok::float8, s.enabled, s.ok,
		       s.run_at, s.error, c.range_mode, r.range_source,
		       CASE WHEN r.range_source = 'learned' THEN r.min_ok::float8 END,
		       CASE WHEN r.range_source = 'learned' THEN r.max_ok::float8 END, r.history_weeks, c.remedy
		FROM webhooks.check_status AS s
		JOIN webhooks.checks AS c ON c.name = s.name
		LEFT JOIN webhooks.check_results AS r ON r.name = s.name AND r.run_at = s.run_at
		ORDER BY array_position($1::text[], s.family), s.name`, familyOrder))
	for _, c := range st.Checks {
		if c.Enabled && c.OK != nil && !*c.OK {
			st.Breaches++
		}
	}
	section("retrying", c.readRetrying(ctx, st))
	section("traffic", collect(ctx, c, &st.Traffic, `
		SELECT bucket, sum(received)::bigint, sum(processed)::bigint, sum(dead)::bigint, max(wait_p50_s)::float8, max(wait_p99_s)::float8
		FROM webhooks.traffic_5m WHERE bucket >= now() - interval '1 hour'
		GROUP BY bucket ORDER BY bucket`))
	// status_url may carry a presigned token: webhooks.find_gaps hides it
	// from reader roles (webhooks._expectations_masked), and the console,
	// whose readers need no token, never shows it either.
	if gaps, err := status.FindGaps(ctx, c.pool, "", 50); err == nil {
		for i := range gaps {
			gaps[i].StatusURL = ""
		}
		st.Gaps = gaps
	} else {
		section("gaps", err)
	}
	section("tombstones", collect(ctx, c, &st.Tombstones, `SELECT provider, external_id, reason, created_at FROM webhooks.tombstones ORDER BY created_at DESC LIMIT 20`))
	section("dead", collect(ctx, c, &st.Dead, deadSQL))
	section("by_provider", collect(ctx, c, &st.ByProvider, byProviderSQL))
	section("traffic_24h", collect(ctx, c, &st.Traffic24h, `
		SELECT date_trunc('hour', bucket), sum(received)::bigint, sum(processed)::bigint, sum(dead)::bigint,
		       (percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_p50_s))::float8, max(wait_p99_s)::float8
		FROM webhooks.traffic_5m GROUP BY 1 ORDER BY 1`))
	for _, w := range []struct {
		dst     *trafficSummary
		d, name string
	}{{&st.Window1h, "1 hour", "last_hour"}, {&st.Window24h, "24 hours", "last_24h"}} {
		err := c.pool.QueryRow(ctx, `
			SELECT coalesce(sum(received), 0)::bigint, coalesce(sum(processed), 0)::bigint, coalesce(sum(dead), 0)::bigint,
			       (percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_p50_s))::float8, max(wait_p99_s)::float8
			FROM webhooks.traffic_5m WHERE bucket >= now() - $1::interval`, w.d).Scan(
			&w.dst.Received, &w.dst.Processed, &w.dst.Dead, &w.dst.WaitP50, &w.dst.WaitP99)
		section(w.name, err)
	}
	section("backfills", collect(ctx, c, &st.Backfills, backfillsSQL))
	// A first pass cut short inserts its row with completed_at = last_pass_at
	// and an error; any later pass moves completed_at only when complete.
	section("backfill", collect(ctx, c, &st.Backfill, `
		SELECT provider, read_until, extract(epoch FROM now() - read_until)::float8,
		       CASE WHEN last_error IS NOT NULL AND completed_at = last_pass_at THEN NULL ELSE completed_at END,
		       last_pass_at, last_listed, last_recovered, listed_total, recovered_total, last_error
		FROM webhooks.backfill_checkpoints ORDER BY provider LIMIT 100`))
	if ord, err := status.ReadOrdering(ctx, c.pool, "", orderingShown); err == nil {
		st.Ordering = ord
	} else {
		section("ordering", err)
	}
	p, err := c.paused(ctx)
	section("paused", err)
	if p != nil {
		st.PausedList = p
	}
	var run reconcileRun
	err = c.pool.QueryRow(ctx, `SELECT started_at, counts FROM webhooks.reconcile_runs ORDER BY id DESC LIMIT 1`).Scan(&run.StartedAt, &run.CountsRaw)
	if err == nil {
		st.LastReconcile = &run
	} else if err != pgx.ErrNoRows {
		section("last_reconcile", err)
	}
	st.Verdict = verdictOf(st, c.started)
	return st, nil
}

// collect scans every row of a query into *dst by position.
func collect[T any](ctx context.Context, c *Console, dst *[]T, sql string, args ...any) error {
	rows, err := c.pool.Query(ctx, sql, args...)
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

// apiStatus is GET /api/status.
func (c *Console) apiStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := c.status(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, st)
}
