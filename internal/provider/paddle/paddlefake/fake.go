// Package paddlefake is a strict fake of Paddle Billing's event list, the
// API backfill reads for kind paddle, for the tests: it answers as Paddle
// documents it (GET /events with after, order_by and per_page; data plus
// meta.pagination with next, has_more and estimated_total), refuses query
// parameters the real API would not accept, checks the key, and can be
// scripted to fail.
package paddlefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one event of the fake Paddle account. IDs order the list, as
// Paddle's time-ordered evt_ ids do: give later events greater ids (ID).
type Event struct {
	ID         string
	Type       string
	OccurredAt time.Time
	// CustomerID, when set, is data.customer_id.
	CustomerID string
}

// ID returns a Paddle-like event id that sorts by at, then by n.
func ID(at time.Time, n int) string {
	return fmt.Sprintf("evt_%013d%06d", at.UnixMilli(), n)
}

// Server is a fake of Paddle's GET /events: ordered by id (order_by
// id[ASC], which it assumes is the default, or id[DESC]), paged with per_page (default 50; a
// larger number than 200 is served as 200, as Paddle does) and after (the
// entities after that id in the requested order, not including it);
// meta.pagination.next is always set, even on the last page, as Paddle
// documents. Any other query parameter, or a malformed one, answers 400.
type Server struct {
	*httptest.Server
	// Key is the API key it expects as a Bearer token.
	Key string
	// Fail, when set, is asked before each request (n counts from 1): a
	// status other than 0 is answered instead, with retryAfter when set.
	Fail func(n int, r *http.Request) (status int, retryAfter string)

	mu       sync.Mutex
	events   []Event // ascending id
	requests atomic.Int64
	queries  []string
}

// New starts a fake Paddle API with key; Close it when done.
func New(key string) *Server {
	s := &Server{Key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", s.list)
	s.Server = httptest.NewServer(mux)
	return s
}

// Add records events.
func (s *Server) Add(evs ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	slices.SortFunc(s.events, func(a, b Event) int { return strings.Compare(a.ID, b.ID) })
}

// Requests returns how many requests it answered.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Queries returns the raw query of every request, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

// JSON returns the JSON of the event entity e, as the list serves it (a
// webhook's body is the same object).
func (e Event) JSON() []byte {
	cust := e.CustomerID
	if cust == "" {
		cust = "ctm_" + strings.TrimPrefix(e.ID, "evt_")
	}
	b, _ := json.Marshal(map[string]any{
		"event_id": e.ID, "event_type": e.Type, "occurred_at": e.OccurredAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		"notification_id": "ntf_" + strings.TrimPrefix(e.ID, "evt_"),
		"data":            map[string]any{"id": "txn_" + strings.TrimPrefix(e.ID, "evt_"), "status": "completed", "customer_id": cust, "currency_code": "USD"},
	})
	return b
}

func paddleError(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"type": "request_error", "code": code, "detail": detail,
			"documentation_url": "https://developer.paddle.com/v1/errors/shared/" + code},
		"meta": map[string]any{"request_id": "fake"},
	})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	s.mu.Lock()
	s.queries = append(s.queries, r.URL.RawQuery)
	s.mu.Unlock()
	if s.Fail != nil {
		if status, ra := s.Fail(n, r); status != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			paddleError(w, status, "scripted_failure", "scripted failure")
			return
		}
	}
	switch auth := r.Header.Get("Authorization"); {
	case auth == "":
		paddleError(w, http.StatusUnauthorized, "authentication_missing", "Authentication header missing")
		return
	case auth != "Bearer "+s.Key:
		paddleError(w, http.StatusForbidden, "forbidden", "You aren't permitted to perform this request.")
		return
	}
	q := r.URL.Query()
	for k, v := range q {
		if k != "after" && k != "order_by" && k != "per_page" || len(v) != 1 {
			paddleError(w, http.StatusBadRequest, "invalid_field", "Invalid request: unknown or repeated field "+k)
			return
		}
	}
	perPage := 50
	if v := q.Get("per_page"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 {
			paddleError(w, http.StatusBadRequest, "invalid_field", "per_page must be a positive integer")
			return
		}
		perPage = min(p, 200)
	}
	desc := false
	switch q.Get("order_by") {
	case "", "id[ASC]":
	case "id[DESC]":
		desc = true
	default:
		paddleError(w, http.StatusBadRequest, "invalid_field", "order_by: valid fields for ordering: id")
		return
	}
	after := q.Get("after")
	if after != "" && !strings.HasPrefix(after, "evt_") {
		paddleError(w, http.StatusBadRequest, "invalid_field", "after: must be a Paddle event id")
		return
	}
	s.mu.Lock()
	all := slices.Clone(s.events)
	s.mu.Unlock()
	if desc {
		slices.Reverse(all)
	}
	var match []Event
	for _, e := range all {
		if after == "" || (!desc && e.ID > after) || (desc && e.ID < after) {
			match = append(match, e)
		}
	}
	end := min(perPage, len(match))
	data := make([]json.RawMessage, 0, end)
	for _, e := range match[:end] {
		data = append(data, e.JSON())
	}
	// next is always returned, even on the last page: the request's query
	// with after set to the last id of this page (kept when the page is empty).
	v := url.Values{"per_page": {strconv.Itoa(perPage)}}
	if o := q.Get("order_by"); o != "" {
		v.Set("order_by", o)
	}
	if end > 0 {
		v.Set("after", match[end-1].ID)
	} else if after != "" {
		v.Set("after", after)
	}
	next := "https://api.paddle.com/events?" + v.Encode()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"data": data,
		"meta": map[string]any{"request_id": "fake-" + strconv.Itoa(n), "pagination": map[string]any{
			"per_page": perPage, "next": next, "has_more": end < len(match), "estimated_total": len(all),
		}},
	})
}
