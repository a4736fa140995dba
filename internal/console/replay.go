package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// maxReplay is the most events one bulk replay touches (what
// webhooks.replay(bigint[], text) accepts).
const maxReplay = 10000

// replayRequest is the body of POST /api/events/replay.
type replayRequest struct {
	IDs    []int64        `json:"ids"`
	Filter *filter.Filter `json:"filter"`
	Reason string         `json:"reason"`
	// Expect, when set, is the count the operator was shown: the replay
	// happens only if the filter still matches exactly that many events.
	Expect *int `json:"expect"`
}

// apiReplay runs webhooks.replay(bigint[], text) for the listed ids or for
// every event the filter matches (at most maxReplay).
func (c *Console) apiReplay(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	var req replayRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"ids\": [...]} or {\"filter\": {...}} with a \"reason\": " + err.Error()})
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a non-blank \"reason\" is required"})
		return
	}
	if (req.IDs == nil) == (req.Filter == nil) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "give exactly one of \"ids\" or \"filter\""})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	ids := req.IDs
	if req.Filter != nil {
		if err := req.Filter.Validate(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if filterEmpty(req.Filter) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": errEmptyFilter})
			return
		}
		var err error
		if ids, err = c.matchingIDs(ctx, req.Filter); err != nil {
			var tm *tooManyError
			if errors.As(err, &tm) {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": tm.Error(), "matching": tm.N, "max": maxReplay})
				return
			}
			c.log.Warn("replay: match the filter", "error", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
			return
		}
	}
	if req.Expect != nil && *req.Expect != len(ids) {
		writeJSON(w, http.StatusConflict, map[string]any{"error": expectMismatch(len(ids), *req.Expect), "matching": len(ids), "expect": *req.Expect})
		return
	}
	if len(ids) > maxReplay {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "too many ids: " + strconv.Itoa(len(ids)) + ", the limit is " + strconv.Itoa(maxReplay), "max": maxReplay})
		return
	}
	n, err := c.replay(ctx, ids, req.Reason, r)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "22023" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a non-blank reason of at most 1000 characters is required"})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
}

// errEmptyFilter refuses a bulk replay whose filter sets no field.
const errEmptyFilter = "the filter sets no field: replaying every event is refused; filter on a status, provider, type, time range or payload"

// filterEmpty says whether f sets no field (a payload of {} matches every
// event, so it counts as unset).
func filterEmpty(f *filter.Filter) bool {
	p := strings.TrimSpace(string(f.Payload))
	return f.Provider == "" && f.Status == "" && f.EventType == "" && f.ExternalID == "" && f.Source == "" &&
		f.Since == nil && f.Until == nil && (p == "" || p == "null" || strings.ReplaceAll(p, " ", "") == "{}")
}

// expectMismatch says why a confirmed bulk replay was refused.
func expectMismatch(matching, expect int) string {
	return fmt.Sprintf("the filter now matches %d events, not the %d confirmed: nothing was replayed; count again", matching, expect)
}

// bulkReplayForm is POST /events/replay: the filter as form fields, a
// reason, and expect (the count the person confirmed). The replay happens
// only when the filter still matches exactly expect events (else 409 and
// nothing is replayed); a filter that sets no field is refused (400).
func (c *Console) bulkReplayForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f, err := filter.Parse(r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if filterEmpty(&f) {
		http.Error(w, errEmptyFilter, http.StatusBadRequest)
		return
	}
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 0 {
		http.Error(w, "expect (the count you confirmed) is required: count the events first", http.StatusBadRequest)
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" {
		http.Error(w, "a reason is required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	back := "/events?" + filterQuery(r.PostForm).Encode()
	ids, err := c.matchingIDs(ctx, &f)
	var tm *tooManyError
	if errors.As(err, &tm) {
		http.Error(w, tm.Error(), http.StatusBadRequest)
		return
	}
	var fe *filter.Error
	if errors.As(filter.Refused(err), &fe) {
		c.log.Debug("console: bulk replay: a filter value refused", "error", err)
		http.Error(w, fe.Error(), http.StatusBadRequest)
		return
	}
	if err == nil && len(ids) != expect {
		http.Error(w, expectMismatch(len(ids), expect), http.StatusConflict)
		return
	}
	if err == nil {
		var n int
		if n, err = c.replay(ctx, ids, reason, r); err == nil {
			redirectFlash(w, r, back, "bulk-replayed", n)
			return
		}
	}
	c.log.Warn("console: bulk replay", "error", err)
	redirectFlash(w, r, back, "failed", 0)
}

// replay puts ids back to pending (webhooks.replay(bigint[], text, text)),
// records and logs who asked (operator) and wakes the workers.
func (c *Console) replay(ctx context.Context, ids []int64, reason string, r *http.Request) (int, error) {
	if ids == nil {
		ids = []int64{}
	}
	var n int
	err := c.pool.QueryRow(ctx, `SELECT webhooks.replay($1::bigint[], $2::text, $3::text)`, ids, strings.TrimSpace(reason), c.operator(r)).Scan(&n)
	if err != nil {
		c.log.Warn("replay failed", "error", err, "events", len(ids))
		return 0, err
	}
	c.log.Info("events replayed from the console", "asked", len(ids), "replayed", n, "reason", reason, "operator", c.operator(r))
	if n > 0 {
		c.wake("replay")
	}
	return n, nil
}

// replayOne is the console's replay button of one event.
func (c *Console) replayOne(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err != nil || r.ParseForm() != nil {
		http.Error(w, "bad event id or form", http.StatusBadRequest)
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" {
		http.Error(w, "a reason is required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	back := localPath(r.PostForm.Get("back"))
	n, err := c.replay(ctx, []int64{id}, reason, r)
	switch {
	case err != nil:
		redirectFlash(w, r, back, "failed", 0)
	case n == 0:
		redirectFlash(w, r, back, "replay-skipped", 0)
	default:
		redirectFlash(w, r, back, "replayed", n)
	}
}

// redirectFlash sends the browser back to path with a flash code.
func redirectFlash(w http.ResponseWriter, r *http.Request, path, code string, n int) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"flash="+code+"&n="+strconv.Itoa(n), http.StatusSeeOther)
}

// tooManyError is a bulk replay over the limit.
type tooManyError struct{ N int }

// Error says how many events matched and how to narrow the filter.
func (e *tooManyError) Error() string {
	return fmt.Sprintf("the filter matches more than %d events (at least %d): narrow it (a time range, a type) and replay in parts", maxReplay, e.N)
}

// matchingIDs resolves a bulk replay's filter to ids, at most maxReplay.
func (c *Console) matchingIDs(ctx context.Context, f *filter.Filter) ([]int64, error) {
	var args []any
	q := f.ListSQL("e.id, e.received_at", nil, maxReplay+1, c.now(), &args)
	rows, err := c.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ids) > maxReplay {
		return nil, &tooManyError{N: len(ids)}
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}
