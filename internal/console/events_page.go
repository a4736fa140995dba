package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// eventsPage is the data of GET /events.
type eventsPage struct {
	pageData
	Filter      filter.Filter
	Since       string
	Until       string
	PayloadText string
	Limit       int
	Cursor      string
	Statuses    []string
	Providers   []string
	List        *eventList
	Error       string
	Hidden      []hiddenField
	Confirm     *struct{ N int }
	// NoFilter says the filter sets no field: the page offers no bulk
	// replay then (the POST would be refused).
	NoFilter  bool
	MaxReplay int
	CapN      int64
	query     url.Values
}

// filterQuery is the filter's query parameters (no cursor).
func filterQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"provider", "status", "event_type", "external_id", "source", "since", "until", "payload", "limit"} {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// StatusURL is this filter with another status.
func (p *eventsPage) StatusURL(st string) string {
	q := filterQuery(p.query)
	if p.Filter.Status == st {
		q.Del("status")
	} else {
		q.Set("status", st)
	}
	return "/events?" + q.Encode()
}

// NextURL is the next page of this filter.
func (p *eventsPage) NextURL(cursor string) string {
	q := filterQuery(p.query)
	q.Set("cursor", cursor)
	return "/events?" + q.Encode()
}

// FirstURL is the first page of this filter.
func (p *eventsPage) FirstURL() string { return "/events?" + filterQuery(p.query).Encode() }

// SelfURL is this filter without the confirmation step.
func (p *eventsPage) SelfURL() string { return p.FirstURL() }

// eventsHTML is GET /events: the filtered list, and the bulk replay's
// confirmation step (?confirm=replay).
func (c *Console) eventsHTML(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &eventsPage{pageData: c.page(r, "Events", "events"), Statuses: filter.Statuses, MaxReplay: maxReplay, CapN: filter.CountCap,
		Since: q.Get("since"), Until: q.Get("until"), PayloadText: q.Get("payload"), Cursor: q.Get("cursor"), Limit: filter.DefaultLimit, query: q}
	for k, vs := range filterQuery(q) {
		if k != "limit" {
			p.Hidden = append(p.Hidden, hiddenField{k, vs[0]})
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	lr, err := filter.ParseList(r.URL.Query())
	p.Filter, p.Limit = lr.Filter, lr.Limit
	var fe *filter.Error
	switch {
	case errors.As(err, &fe):
		p.Error = fe.Error()
		w.WriteHeader(http.StatusBadRequest)
	case err == nil:
		p.NoFilter = filterEmpty(&lr.Filter)
		if p.List, err = c.listEvents(ctx, lr); err == nil && q.Get("confirm") == "replay" && p.Token && !p.NoFilter {
			ids, merr := c.matchingIDs(ctx, &lr.Filter)
			var tm *tooManyError
			switch {
			case errors.As(merr, &tm):
				p.Confirm = &struct{ N int }{tm.N}
			case merr != nil:
				err = merr
			default:
				p.Confirm = &struct{ N int }{len(ids)}
			}
		}
		if errors.As(filter.Refused(err), &fe) {
			c.log.Debug("console: events page: a filter value refused", "error", err)
			p.List, p.Confirm, p.Error = nil, nil, fe.Error()
			w.WriteHeader(http.StatusBadRequest)
			break
		}
		if err != nil {
			c.log.Warn("console: events page", "error", err)
			unavailable(w)
			return
		}
		p.Paused = p.List.Paused
		p.Providers = c.providerNames()
	}
	c.render(w, "events", p)
}

// providerNames lists the configured providers, for the filter's suggestions.
func (c *Console) providerNames() []string {
	return slices.Clone(c.cfg.Providers)
}

// eventPage is the data of GET /events/{id}.
type eventPage struct {
	pageData
	Event         *eventDetail
	PrettyPayload string
}

// eventHTML is GET /events/{id}: one event, its payload and timeline.
func (c *Console) eventHTML(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		http.Error(w, "the event id must be a positive number", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d, err := c.eventDetail(ctx, id)
	if errors.Is(err, errNoEvent) {
		p := &eventPage{pageData: c.page(r, "No such event", "events")}
		w.WriteHeader(http.StatusNotFound)
		p.Flash = fmt.Sprintf("There is no event %d (it may have been pruned).", id)
		c.render(w, "event", p)
		return
	}
	var paused []pausedProvider
	if err == nil {
		paused, err = c.paused(ctx)
	}
	if err != nil {
		c.log.Warn("console: event page", "error", err)
		unavailable(w)
		return
	}
	p := &eventPage{pageData: c.page(r, fmt.Sprintf("#%d %s", d.ID, d.EventType), "events"), Event: d}
	p.Paused = paused
	if len(d.Payload) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, d.Payload, "", "  ") == nil {
			p.PrettyPayload = buf.String()
		} else {
			p.PrettyPayload = string(d.Payload)
		}
	}
	c.render(w, "event", p)
}
