package paddle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/provider/api"
	"github.com/pginbox/pginbox/internal/provider/sig"
)

// EventLog reads Paddle Billing's event list, the event-log API of kind
// paddle:
//
//	GET <BaseURL>/events?order_by=id[DESC]&per_page=200[&after=<cursor>]
//	Authorization: Bearer <API key>
//	→ {"data": [event, …], "meta": {"request_id": …, "pagination":
//	   {"per_page": N, "next": "<url with after=…>", "has_more": bool, "estimated_total": N}}}
//
// Paddle keeps 90 days of events and has no time filter: the list is read
// newest first (event ids are ordered by time; order_by is always sent,
// whatever Paddle's default order) and the pass stops at the first
// page reaching before its window, as it does for Stripe. Each page's
// cursor is the after of meta.pagination.next (else the last event_id
// listed), read only while has_more is true (Paddle sends next on the last
// page too); the next URL itself is never requested, so only BaseURL's origin
// is ever contacted. Every event is listed (no event_type filter) and
// becomes what its webhook would carry: key = event_id, event type =
// event_type, payload = the event object (a webhook's body is that object
// with a notification_id). An API key with read access to events
// (event.read) is enough.
type EventLog struct {
	provider string
	base     string
	key      string
	client   *http.Client
}

var (
	_ api.EventLog = (*EventLog)(nil)
	_ api.Prober   = (*EventLog)(nil)
)

// paddlePageSize is the largest page Paddle serves.
const paddlePageSize = 200

// NewEventLog returns the event-list client of a paddle provider. baseURL is
// https://api.paddle.com (https://sandbox-api.paddle.com for a sandbox).
func NewEventLog(provider, baseURL, key string) (*EventLog, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := api.ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	if key == "" {
		return nil, fmt.Errorf("provider %s: no API key for Paddle's event list (a key with read access to events)", provider)
	}
	return &EventLog{provider: provider, base: baseURL, key: key, client: api.NewClient(o)}, nil
}

// Provider returns the provider's name.
func (s *EventLog) Provider() string { return s.provider }

// Page reads one page of events, newest first. Paddle cannot filter by time:
// the page may reach before since, where the pass stops.
func (s *EventLog) Page(ctx context.Context, _ time.Time, cursor string) (api.LogPage, error) {
	q := "order_by=id%5BDESC%5D&per_page=" + strconv.Itoa(paddlePageSize)
	if cursor != "" {
		q += "&after=" + url.QueryEscape(cursor)
	}
	body, h, err := s.list(ctx, "/events?"+q)
	if err != nil {
		return api.LogPage{}, err
	}
	page, err := s.parse(body)
	page.ServedAt = api.ServedAt(h)
	return page, err
}

// Probe asks for the newest event only (GET /events?order_by=id[DESC]&per_page=1):
// whether the API answers, for a provider being backed off.
func (s *EventLog) Probe(ctx context.Context) error {
	body, _, err := s.list(ctx, "/events?order_by=id%5BDESC%5D&per_page=1")
	if err != nil {
		return err
	}
	_, err = s.parse(body)
	return err
}

// list GETs one page of the event list (/events?query) with the key.
func (s *EventLog) list(ctx context.Context, pathQuery string) ([]byte, http.Header, error) {
	return api.GetJSON(ctx, s.client, s.provider, "event list", s.base+pathQuery, http.Header{
		"Authorization": {"Bearer " + s.key}, "Accept": {"application/json"},
	})
}

// parse reads a list page. A page whose envelope cannot be read (no data
// array, no meta.pagination.has_more) is refused whole (a *MalformedError);
// an event of a readable page that cannot be stored is returned with Skip
// set, keyed by its event_id when it has one.
func (s *EventLog) parse(body []byte) (api.LogPage, error) {
	bad := func(reason string) (api.LogPage, error) {
		return api.LogPage{}, &api.MalformedError{Provider: s.provider, ExternalID: "event list", Reason: reason}
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
		Meta struct {
			Pagination struct {
				Next    string `json:"next"`
				HasMore *bool  `json:"has_more"`
			} `json:"pagination"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return bad("not a list response")
	}
	if list.Data == nil || list.Meta.Pagination.HasMore == nil {
		return bad(`no "data" or "meta.pagination.has_more"`)
	}
	page := api.LogPage{Entries: make([]api.LogEntry, 0, len(list.Data))}
	last := ""
	for i, raw := range list.Data {
		e := entry(i, raw)
		page.Entries = append(page.Entries, e)
		if e.Key != "" {
			last = e.Key
		}
	}
	if !*list.Meta.Pagination.HasMore {
		return page, nil
	}
	page.Next = afterOf(list.Meta.Pagination.Next)
	if page.Next == "" {
		page.Next = last // after takes a Paddle ID
	}
	if page.Next == "" {
		return bad("has_more with no next cursor and no event_id to page after")
	}
	return page, nil
}

// afterOf returns the after parameter of a meta.pagination.next URL, "" when
// there is none.
func afterOf(next string) string {
	u, err := url.Parse(next)
	if err != nil {
		return ""
	}
	a := u.Query().Get("after")
	if !api.ValidText(a) {
		return ""
	}
	return a
}

// entry reads one listed event; one that cannot be stored has Skip set.
func entry(i int, raw json.RawMessage) api.LogEntry {
	// The id and time are read leniently first, so that an event that
	// cannot be stored is still named in the log and placed in time.
	var head struct {
		ID         any `json:"event_id"`
		OccurredAt any `json:"occurred_at"`
	}
	_ = json.Unmarshal(raw, &head)
	var e api.LogEntry
	if id, ok := head.ID.(string); ok && api.ValidText(id) {
		e.Key = id
	}
	if s, ok := head.OccurredAt.(string); ok {
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			e.Created = at
		}
	}
	env, err := sig.ReadEnvelope(raw)
	if err != nil {
		why := "not JSON"
		if r, ok := errors.AsType[*sig.RejectError](err); ok {
			why = r.Reason
		}
		e.Skip = fmt.Sprintf("event %d is not a JSON object Postgres accepts (%s)", i, why)
		return e
	}
	typ, ok := env.Str("event_type")
	if e.Key == "" || !ok || !api.ValidText(typ) {
		e.Skip = fmt.Sprintf("event %d has no usable event_id or event_type", i)
		return e
	}
	if e.Created.IsZero() {
		e.Skip = fmt.Sprintf("event %d has no occurred_at time", i)
		return e
	}
	e.EventType, e.Payload = typ, raw
	return e
}

// Fetch returns e: the list carries whole events.
func (s *EventLog) Fetch(_ context.Context, e api.LogEntry) (api.LogEntry, error) {
	return e, nil
}
