package runner

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed console.html
var consoleHTML string

//go:embed console.js
var consoleJS string

var consoleFuncs = template.FuncMap{
	"css":  func() template.CSS { return template.CSS(baseCSS + consoleCSS) },
	"ago":  fmtAgo,
	"clip": clip,
	"num": func(v any) string {
		f, ok := toFloat(v)
		if !ok {
			return "–"
		}
		return fmtNum(f)
	},
	"since": func(t time.Time) string { return fmtDuration(time.Since(t)) },
	"secs": func(v any) string {
		f, ok := toFloat(v)
		if !ok {
			return "–"
		}
		return fmtDuration(time.Duration(f * float64(time.Second)))
	},
	"rng":   fmtRange,
	"deref": func(b *bool) bool { return b != nil && *b },
	"code":  codeText,
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int) int { return a - b },
}

var consoleTmpl = template.Must(template.New("console").Funcs(consoleFuncs).Parse(consoleHTML))

// pageData is what every console page carries (the layout's part).
type pageData struct {
	Title  string
	Nav    string
	Token  bool
	Flash  string
	Now    time.Time
	Paused []pausedProvider
}

func (s *Server) page(r *http.Request, title, nav string) pageData {
	return pageData{Title: title, Nav: nav, Token: s.auth.token != "", Flash: flashText(r), Now: time.Now()}
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := consoleTmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Warn("render console page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

type hiddenField struct{ Name, Value string }

// eventsPage is the data of GET /events.
type eventsPage struct {
	pageData
	Filter      eventsFilter
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
	MaxReplay   int
	CapN        int64
	query       url.Values
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

func (s *Server) eventsHTML(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &eventsPage{pageData: s.page(r, "Events", "events"), Statuses: statuses, MaxReplay: maxReplay, CapN: countCap,
		Since: q.Get("since"), Until: q.Get("until"), PayloadText: q.Get("payload"), Cursor: q.Get("cursor"), Limit: defaultListLimit, query: q}
	for k, vs := range filterQuery(q) {
		if k != "limit" {
			p.Hidden = append(p.Hidden, hiddenField{k, vs[0]})
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	lr, err := parseList(r)
	p.Filter, p.Limit = lr.Filter, lr.Limit
	var fe *filterError
	switch {
	case errors.As(err, &fe):
		p.Error = fe.Error()
		w.WriteHeader(http.StatusBadRequest)
	case err == nil:
		if p.List, err = s.listEvents(ctx, lr); err == nil && q.Get("confirm") == "replay" && p.Token {
			ids, merr := s.matchingIDs(ctx, &lr.Filter)
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
		if err != nil {
			s.log.Warn("console: events page", "error", err)
			unavailable(w)
			return
		}
		p.Paused = p.List.Paused
		p.Providers = s.providerNames()
	}
	s.render(w, "events", p)
}

// providerNames lists the configured providers, for the filter's suggestions.
func (s *Server) providerNames() []string {
	var names []string
	for n := range s.cfg.Providers {
		names = append(names, n)
	}
	return names
}

// bulkReplayForm is POST /events/replay: the filter as form fields, a
// reason, and expect (the count the person confirmed).
func (s *Server) bulkReplayForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f, err := parseFilter(r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
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
	ids, err := s.matchingIDs(ctx, &f)
	var tm *tooManyError
	if errors.As(err, &tm) {
		http.Error(w, tm.Error(), http.StatusBadRequest)
		return
	}
	if err == nil {
		var n int
		if n, err = s.replay(ctx, ids, reason, r); err == nil {
			redirectFlash(w, r, back, "bulk-replayed", n)
			return
		}
	}
	s.log.Warn("console: bulk replay", "error", err)
	redirectFlash(w, r, back, "failed", 0)
}

// eventPage is the data of GET /events/{id}.
type eventPage struct {
	pageData
	Event         *eventDetail
	PrettyPayload string
}

func (s *Server) eventHTML(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		http.Error(w, "the event id must be a positive number", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d, err := s.eventDetail(ctx, id)
	if errors.Is(err, errNoEvent) {
		p := &eventPage{pageData: s.page(r, "No such event", "events")}
		w.WriteHeader(http.StatusNotFound)
		p.Flash = fmt.Sprintf("There is no event %d (it may have been pruned).", id)
		s.render(w, "event", p)
		return
	}
	var paused []pausedProvider
	if err == nil {
		paused, err = s.paused(ctx)
	}
	if err != nil {
		s.log.Warn("console: event page", "error", err)
		unavailable(w)
		return
	}
	p := &eventPage{pageData: s.page(r, fmt.Sprintf("#%d %s", d.ID, d.EventType), "events"), Event: d}
	p.Paused = paused
	if len(d.Payload) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, d.Payload, "", "  ") == nil {
			p.PrettyPayload = buf.String()
		} else {
			p.PrettyPayload = string(d.Payload)
		}
	}
	s.render(w, "event", p)
}

func fmtAgo(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "–"
		}
		t = *x
	default:
		return ""
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + fmtDuration(-d)
	}
	return fmtDuration(d) + " ago"
}

// toFloat reads the numbers templates format (nil pointers are absent).
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case *float64:
		if x == nil {
			return 0, false
		}
		return *x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// codeText renders `backticks` of the docs' remedies as <code>.
func codeText(s string) template.HTML {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
		} else {
			b.WriteString(template.HTMLEscapeString(p))
		}
	}
	return template.HTML(b.String())
}

func (s *Server) consoleScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write([]byte(consoleJS))
}
