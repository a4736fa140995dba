// Package stripefake is a strict fake of Stripe's event list, the API
// backfill reads for kind stripe, for the tests and the bench: it answers as
// the real API documents, refuses query parameters the real API would not
// accept, checks the key, and can be scripted to fail.
package stripefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one event of the fake Stripe account.
type Event struct {
	ID      string
	Type    string
	Created time.Time
}

// Server is a fake of Stripe's GET /v1/events, newest first (created, then
// id, descending), paged with limit (1..100, default 10) and starting_after,
// filtered with created[gte]. Any other query parameter answers 400.
type Server struct {
	*httptest.Server
	// Key is the secret key it expects as a Bearer token.
	Key string
	// Fail, when set, is asked before each request (n counts from 1): a
	// status other than 0 is answered instead, with retryAfter when set.
	Fail func(n int, r *http.Request) (status int, retryAfter string)

	mu       sync.Mutex
	events   []Event // newest first
	requests atomic.Int64
	queries  []string
}

// New starts a fake Stripe API with key; Close it when done.
func New(key string) *Server {
	s := &Server{Key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/events", s.list)
	s.Server = httptest.NewServer(mux)
	return s
}

// Add records events.
func (s *Server) Add(evs ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	slices.SortFunc(s.events, func(a, b Event) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmpString(b.ID, a.ID)
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Requests returns how many requests it answered.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Queries returns the raw query of every request, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

// JSON returns the JSON of the event object e, as the list serves it.
func (e Event) JSON() []byte {
	b, _ := json.Marshal(map[string]any{
		"id": e.ID, "object": "event", "type": e.Type, "created": e.Created.Unix(), "api_version": "2024-06-20",
		"livemode": false, "pending_webhooks": 1,
		"data": map[string]any{"object": map[string]any{"id": "ch_" + e.ID, "object": "charge", "amount": 1000}},
	})
	return b
}

func stripeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error": {"type": "invalid_request_error", "message": %q}}`, msg)
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
			stripeError(w, status, "scripted failure")
			return
		}
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Key {
		stripeError(w, http.StatusUnauthorized, "Invalid API Key provided")
		return
	}
	q := r.URL.Query()
	for k, v := range q {
		if k != "created[gte]" && k != "limit" && k != "starting_after" || len(v) != 1 {
			stripeError(w, http.StatusBadRequest, "Received unknown parameter: "+k)
			return
		}
	}
	limit := 10
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > 100 {
			stripeError(w, http.StatusBadRequest, "limit must be between 1 and 100")
			return
		}
		limit = l
	}
	var gte int64
	if v := q.Get("created[gte]"); v != "" {
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			stripeError(w, http.StatusBadRequest, "Invalid integer: "+v)
			return
		}
		gte = x
	}
	s.mu.Lock()
	var match []Event
	for _, e := range s.events {
		if e.Created.Unix() >= gte {
			match = append(match, e)
		}
	}
	s.mu.Unlock()
	start := 0
	if after := q.Get("starting_after"); after != "" {
		i := slices.IndexFunc(match, func(e Event) bool { return e.ID == after })
		if i < 0 {
			stripeError(w, http.StatusBadRequest, "No such event: '"+after+"'")
			return
		}
		start = i + 1
	}
	end := min(start+limit, len(match))
	data := make([]json.RawMessage, 0, end-start)
	for _, e := range match[start:end] {
		data = append(data, e.JSON())
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/events", "data": data, "has_more": end < len(match)})
}
