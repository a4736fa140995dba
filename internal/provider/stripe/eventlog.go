package stripe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/backfill/apiclient"
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
	origin   apiclient.Origin
	key      string
	client   *http.Client
}

var _ apiclient.EventLog = (*EventLog)(nil)

// stripePageSize is the largest page Stripe serves.
const stripePageSize = 100

// NewEventLog returns the event-list client of a stripe provider.
func NewEventLog(provider, baseURL, key string) (*EventLog, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := apiclient.ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	if key == "" {
		return nil, fmt.Errorf("provider %s: no secret key for Stripe's event list (a restricted key with read access to Events)", provider)
	}
	return &EventLog{provider: provider, base: baseURL, origin: o, key: key, client: apiclient.NewClient(o)}, nil
}

// Provider returns the provider's name.
func (s *EventLog) Provider() string { return s.provider }

// Page reads one page of events created at or after since.
func (s *EventLog) Page(ctx context.Context, since time.Time, cursor string) (apiclient.LogPage, error) {
	q := "created%5Bgte%5D=" + strconv.FormatInt(since.Unix(), 10) + "&limit=" + strconv.Itoa(stripePageSize)
	if cursor != "" {
		q += "&starting_after=" + url.QueryEscape(cursor)
	}
	body, _, err := apiclient.GetJSON(ctx, s.client, s.provider, "event list", s.base+"/v1/events?"+q, http.Header{
		"Authorization": {"Bearer " + s.key}, "Accept": {"application/json"},
	})
	if err != nil {
		return apiclient.LogPage{}, err
	}
	return s.parse(body)
}

// parse reads a list page whole: one bad event refuses the page.
func (s *EventLog) parse(body []byte) (apiclient.LogPage, error) {
	bad := func(reason string) (apiclient.LogPage, error) {
		return apiclient.LogPage{}, &apiclient.MalformedError{Provider: s.provider, ExternalID: "event list", Reason: reason}
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
	page := apiclient.LogPage{Entries: make([]apiclient.LogEntry, 0, len(list.Data))}
	for i, raw := range list.Data {
		env, err := sig.ReadEnvelope(raw)
		if err != nil {
			return bad(fmt.Sprintf("event %d is not a JSON object Postgres accepts", i))
		}
		id, ok := env.Str("id")
		typ, ok2 := env.Str("type")
		if !ok || !ok2 || !apiclient.ValidText(id) || !apiclient.ValidText(typ) {
			return bad(fmt.Sprintf("event %d has no usable id or type", i))
		}
		var created int64
		if err := json.Unmarshal(env["created"], &created); err != nil || created <= 0 {
			return bad(fmt.Sprintf("event %s has no created time", id))
		}
		page.Entries = append(page.Entries, apiclient.LogEntry{Key: id, Created: time.Unix(created, 0), EventType: typ, Payload: raw})
	}
	if *list.HasMore {
		if len(page.Entries) == 0 {
			return bad("has_more with an empty page")
		}
		page.Next = page.Entries[len(page.Entries)-1].Key
	}
	return page, nil
}

// Fetch returns e: the list carries whole events.
func (s *EventLog) Fetch(_ context.Context, e apiclient.LogEntry) (apiclient.LogEntry, error) {
	return e, nil
}
