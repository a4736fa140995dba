package stripe

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

// EventLog reads Stripe's event list, the event-log API of kind stripe:
//
//	GET <BaseURL>/v1/events?created[gte]=<unix>&limit=100[&starting_after=<evt id>]
//	Authorization: Bearer <secret key>
//	→ {"object": "list", "data": [event, …], "has_more": bool}, newest first
//
// Every event is listed (no type or delivery_success filter) and becomes
// what its webhook would carry: key = the event id, event type = its type,
// payload = the event object. Pages follow starting_after = the last id of
// the previous page, so events sharing one created second across a page
// boundary are neither skipped nor repeated. A restricted key with read
// access to Events is enough. Only BaseURL's origin is contacted.
type EventLog struct {
	provider string
	base     string
	origin   api.Origin
	key      string
	client   *http.Client
}

var (
	_ api.EventLog = (*EventLog)(nil)
	_ api.Prober   = (*EventLog)(nil)
)

// stripePageSize is the largest page Stripe serves.
const stripePageSize = 100

// NewEventLog returns the event-list client of a stripe provider.
func NewEventLog(provider, baseURL, key string) (*EventLog, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := api.ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	if key == "" {
		return nil, fmt.Errorf("provider %s: no secret key for Stripe's event list (a restricted key with read access to Events)", provider)
	}
	return &EventLog{provider: provider, base: baseURL, origin: o, key: key, client: api.NewClient(o)}, nil
}

// Provider returns the provider's name.
func (s *EventLog) Provider() string { return s.provider }

// Page reads one page of events created at or after since.
func (s *EventLog) Page(ctx context.Context, since time.Time, cursor string) (api.LogPage, error) {
	q := "created%5Bgte%5D=" + strconv.FormatInt(since.Unix(), 10) + "&limit=" + strconv.Itoa(stripePageSize)
	if cursor != "" {
		q += "&starting_after=" + url.QueryEscape(cursor)
	}
	body, h, err := s.list(ctx, "/v1/events?"+q)
	if err != nil {
		return api.LogPage{}, err
	}
	page, err := s.parse(body)
	page.ServedAt = api.ServedAt(h)
	return page, err
}

// Probe asks for the newest event only (GET /v1/events?limit=1): whether
// the API answers, for a provider being backed off.
func (s *EventLog) Probe(ctx context.Context) error {
	body, _, err := s.list(ctx, "/v1/events?limit=1")
	if err != nil {
		return err
	}
	_, err = s.parse(body)
	return err
}

// list GETs one page of the event list (/v1/events?query) with the key.
func (s *EventLog) list(ctx context.Context, pathQuery string) ([]byte, http.Header, error) {
	return api.GetJSON(ctx, s.client, s.provider, "event list", s.base+pathQuery, http.Header{
		"Authorization": {"Bearer " + s.key}, "Accept": {"application/json"},
	})
}

// parse reads a list page. A page whose envelope is not a list object is
// refused whole (a *MalformedError); an event of a readable page that cannot
// be stored (not a JSON object Postgres accepts, too deep, no usable id,
// type or created time) is returned with Skip set, keyed by its id when it
// has one, so it never blocks the events around it.
func (s *EventLog) parse(body []byte) (api.LogPage, error) {
	bad := func(reason string) (api.LogPage, error) {
		return api.LogPage{}, &api.MalformedError{Provider: s.provider, ExternalID: "event list", Reason: reason}
	}
	var list struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		HasMore *bool             `json:"has_more"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return bad("not a list object")
	}
	if list.Object != "list" || list.HasMore == nil || list.Data == nil {
		return bad(`no "object": "list", "data" or "has_more"`)
	}
	page := api.LogPage{Entries: make([]api.LogEntry, 0, len(list.Data))}
	for i, raw := range list.Data {
		e := entry(i, raw)
		page.Entries = append(page.Entries, e)
		if e.Key != "" {
			// starting_after takes any listed id, the last one's or, when
			// that one has none, the last one that does (the few after it
			// are listed again and passed over as already seen).
			page.Next = e.Key
		}
	}
	if !*list.HasMore {
		page.Next = ""
	} else if page.Next == "" {
		return bad("has_more with no event id to page after")
	}
	return page, nil
}

// entry reads one listed event; one that cannot be stored has Skip set.
func entry(i int, raw json.RawMessage) api.LogEntry {
	// The id and created time are read leniently first, so that an event
	// that cannot be stored is still named in the log and placed in time.
	var head struct {
		ID      any `json:"id"`
		Created any `json:"created"`
	}
	_ = json.Unmarshal(raw, &head)
	var e api.LogEntry
	if id, ok := head.ID.(string); ok && api.ValidText(id) {
		e.Key = id
	}
	if c, ok := head.Created.(float64); ok && c > 0 && c < 1<<40 && c == float64(int64(c)) {
		e.Created = time.Unix(int64(c), 0)
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
	typ, ok := env.Str("type")
	if e.Key == "" || !ok || !api.ValidText(typ) {
		e.Skip = fmt.Sprintf("event %d has no usable id or type", i)
		return e
	}
	if e.Created.IsZero() {
		e.Skip = fmt.Sprintf("event %d has no created time", i)
		return e
	}
	e.EventType, e.Payload = typ, raw
	return e
}

// Fetch returns e: the list carries whole events.
func (s *EventLog) Fetch(_ context.Context, e api.LogEntry) (api.LogEntry, error) {
	return e, nil
}
