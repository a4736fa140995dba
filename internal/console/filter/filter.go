// Package filter reads the event list's filter (query parameters of
// GET /events and /api/events, or the JSON of a bulk replay), refuses what
// PostgreSQL would refuse with the message a 400 carries, and writes the
// SQL of the list page and of its capped counts per status: one index range
// scan per status, a keyset cursor, a bounded window for payload searches.
// It runs no query: internal/console does, as the schema owner, so the SQL
// reads the two tables behind webhooks.events, the queue (webhooks.inbox)
// and the processed history by day (webhooks.history), each the way it is
// indexed: a status other than processed is the queue alone, and processed
// is the queue's last processed events merged with history read newest
// day first, stopping at the page.
package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// The event list's limits.
const (
	DefaultLimit = 50
	maxLimit     = 500
	// payloadWindow is the widest received_at window a payload search
	// scans (payload containment has no index: ingest would pay for one).
	payloadWindow = 7 * 24 * time.Hour
	// payloadDefault is the window a payload search covers without since.
	payloadDefault = 24 * time.Hour
	// CountCap bounds each per-status count of the list: past it the
	// console shows "1000+".
	CountCap = 1000
)

// Statuses are the event Statuses the list filters and counts by.
var Statuses = []string{"pending", "processing", "processed", "dead"}

// Filter is the list's filter, from query parameters or the JSON of
// a bulk replay.
type Filter struct {
	Provider   string          `json:"provider,omitempty"`
	Status     string          `json:"status,omitempty"`
	EventType  string          `json:"event_type,omitempty"`
	ExternalID string          `json:"external_id,omitempty"`
	Source     string          `json:"source,omitempty"`
	Since      *time.Time      `json:"since,omitempty"`
	Until      *time.Time      `json:"until,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// Error is a bad filter value: a 400 with its message.
type Error struct{ msg string }

// Error is the message the 400 answer carries.
func (e *Error) Error() string { return e.msg }

// bad returns an Error with a formatted message.
func bad(format string, a ...any) error { return &Error{fmt.Sprintf(format, a...)} }

// Refused turns the database's refusal of a filter value (a data
// exception, SQLSTATE class 22, or nesting too deep, 54001) into a
// Error, for whatever value the checks here let through; any other
// error is returned as it is.
func Refused(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || pe.Code == "54001") {
		return bad("a filter value the database cannot read (SQLSTATE %s): check the payload, the times and the cursor", pe.Code)
	}
	return err
}

// Parse reads the filter from URL query parameters.
func Parse(q url.Values) (Filter, error) {
	f := Filter{
		Provider: strings.TrimSpace(q.Get("provider")), Status: strings.TrimSpace(q.Get("status")),
		EventType: strings.TrimSpace(q.Get("event_type")), ExternalID: strings.TrimSpace(q.Get("external_id")),
		Source: strings.TrimSpace(q.Get("source")),
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := strings.TrimSpace(q.Get(p.name))
		if v == "" {
			continue
		}
		t, err := parseTime(v)
		if err != nil {
			return f, bad("%s: %q is not an RFC 3339 time like 2026-01-02T15:04:05Z", p.name, v)
		}
		*p.dst = &t
	}
	if v := strings.TrimSpace(q.Get("payload")); v != "" {
		f.Payload = json.RawMessage(v)
	}
	return f, f.Validate()
}

// parseTime accepts RFC 3339, and the datetime-local form of an HTML input
// (2006-01-02T15:04, read as UTC).
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

// Validate checks the values the query does not: status, payload, window.
func (f *Filter) Validate() error {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return bad("status: %q is not one of %s", f.Status, strings.Join(Statuses, ", "))
	}
	for _, p := range []struct{ name, v string }{{"provider", f.Provider}, {"event_type", f.EventType}, {"external_id", f.ExternalID}, {"source", f.Source}} {
		if len(p.v) > 255 {
			return bad("%s: longer than 255 bytes", p.name)
		}
		// Postgres text holds neither NUL nor invalid UTF-8: refused there,
		// they would answer 503.
		if !utf8.ValidString(p.v) || strings.IndexByte(p.v, 0) >= 0 {
			return bad("%s: not UTF-8 text without NUL characters", p.name)
		}
	}
	if f.Since != nil && f.Until != nil && !f.Since.Before(*f.Until) {
		return bad("since (%s) must be before until (%s)", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	if len(f.Payload) > 0 {
		if len(f.Payload) > 4096 {
			return bad("payload: longer than 4096 bytes")
		}
		// json.Valid refuses what follows the object ({"a":1}}), which
		// the decoder alone would leave unread.
		if !json.Valid(f.Payload) {
			return bad(`payload: not a JSON object like {"customer": "cus_123"}`)
		}
		if why := jsonbRefusal(f.Payload); why != "" {
			return bad("payload: %s", why)
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(f.Payload))
		dec.UseNumber() // numbers past float64 (1e400) are fine for jsonb
		if dec.Decode(&obj) != nil || obj == nil {
			return bad(`payload: not a JSON object like {"customer": "cus_123"}`)
		}
		end := time.Now()
		if f.Until != nil {
			end = *f.Until
		}
		if f.Since != nil && end.Sub(*f.Since) > payloadWindow {
			return bad("payload: a payload search covers at most %d days (since … until); narrow the window", int(payloadWindow.Hours()/24))
		}
	}
	return nil
}

// jsonbRefusal says why Postgres's jsonb input would refuse raw, valid JSON
// that Go accepts, or "" when it would not: invalid UTF-8, a \u0000 escape,
// a lone UTF-16 surrogate escape ("\ud800"), a number past numeric's
// range (1e-20000).
func jsonbRefusal(raw []byte) string {
	if !utf8.Valid(raw) {
		return "not UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] != '\\' {
					continue
				}
				if i++; raw[i] != 'u' {
					continue
				}
				r := hex4(raw[i+1 : i+5])
				i += 4
				switch {
				case r == 0:
					return `\u0000 (a NUL character) is not allowed`
				case r >= 0xd800 && r < 0xdc00:
					if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
						if lo := hex4(raw[i+3 : i+7]); lo >= 0xdc00 && lo < 0xe000 {
							i += 6
							continue
						}
					}
					return fmt.Sprintf(`\u%04x is half of a UTF-16 surrogate pair without its other half`, r)
				case r >= 0xdc00 && r < 0xe000:
					return fmt.Sprintf(`\u%04x is half of a UTF-16 surrogate pair without its other half`, r)
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(raw) && strings.IndexByte("+-0123456789.eE", raw[j]) >= 0 {
				j++
			}
			if !numericFits(string(raw[i:j])) {
				return fmt.Sprintf("the number %.40s is past what Postgres's numeric holds", raw[i:j])
			}
			i = j - 1
		}
	}
	return ""
}

// numericFits reports whether the JSON number num is within numeric's
// range: at most 131072 digits before the decimal point and 16383 after it.
func numericFits(num string) bool {
	mant, exp := strings.TrimPrefix(num, "-"), 0
	if k := strings.IndexAny(mant, "eE"); k >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(mant[k+1:], "+"))
		if err != nil || e > 1<<20 || e < -1<<20 {
			return false
		}
		mant, exp = mant[:k], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	return len(frac)-exp <= 16383 && len(whole)+exp <= 131072
}

// hex4 reads the four hex digits of a \u escape (json.Valid checked them).
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 16)
	return rune(n)
}

// Window returns the received_at bounds, applying the payload search's
// default window (the 24 hours before until, or before now).
func (f *Filter) Window(now time.Time) (since, until *time.Time) {
	since, until = f.Since, f.Until
	if len(f.Payload) > 0 && since == nil {
		end := now
		if until != nil {
			end = *until
		}
		s := end.Add(-payloadDefault)
		since = &s
	}
	return since, until
}

// where returns a WHERE clause (without status) and its arguments.
func (f *Filter) where(now time.Time, args *[]any) string {
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	var conds []string
	var provider string
	if f.Provider != "" {
		provider = arg(f.Provider)
		conds = append(conds, "e.provider = "+provider)
	}
	if f.ExternalID != "" {
		// webhooks.keys holds the key (provider, external_id) of every
		// event with its id and received_at: one probe of its primary key
		// (per provider listed, without a provider), then the event by id
		// in the queue, or by (received_at, id) in the one day slice of
		// history that holds it. Neither table is indexed on the key.
		if f.Provider != "" {
			conds = append(conds, "(e.id, e.received_at) IN (SELECT k.event_id, k.received_at FROM webhooks.keys AS k WHERE k.provider = "+
				provider+" AND k.external_id = "+arg(f.ExternalID)+")")
		} else {
			conds = append(conds, "(e.id, e.received_at) IN (SELECT k.event_id, k.received_at FROM webhooks._providers() AS p "+
				"JOIN webhooks.keys AS k ON k.provider = p.provider AND k.external_id = "+arg(f.ExternalID)+")")
		}
	}
	if f.EventType != "" {
		conds = append(conds, "e.event_type = "+arg(f.EventType))
	}
	if f.Source != "" {
		conds = append(conds, "e.source = "+arg(f.Source))
		if f.Source != "webhook" {
			// A literal the planner can match against the partial index
			// of non-webhook rows, with a generic plan too.
			conds = append(conds, "e.source <> 'webhook'")
		}
	}
	since, until := f.Window(now)
	if since != nil {
		conds = append(conds, "e.received_at >= "+arg(*since))
	}
	if until != nil {
		conds = append(conds, "e.received_at < "+arg(*until))
	}
	if len(f.Payload) > 0 {
		conds = append(conds, "e.payload @> "+arg(string(f.Payload))+"::jsonb")
	}
	if len(conds) == 0 {
		return "true"
	}
	return strings.Join(conds, " AND ")
}

// statusList is the statuses the filter selects.
func (f *Filter) statusList() []string {
	if f.Status != "" {
		return []string{f.Status}
	}
	return Statuses
}

// ListSQL is the page query, newest first by (received_at, id): one branch
// per status, each an index range scan of the queue ((status, received_at,
// id), (status, provider, received_at, id), or, for a source other than
// webhook, the partial (status, received_at, id) of non-webhook rows), plus,
// for processed, one of history, whose day slices are read newest first
// through (received_at, id), (provider, received_at, id) or the partial
// (source, received_at, id) of non-webhook rows; a time window bounds them,
// the planner merges them in order and stops at the limit, so a page opens
// the newest slices only. after, when set, is the keyset cursor: rows
// strictly older than it (the plain bound on received_at beside the row
// comparison leaves out the slices newer than the cursor).
func (f *Filter) ListSQL(cols string, after *Cursor, limit int, now time.Time, args *[]any) string {
	where := f.where(now, args)
	if after != nil {
		*args = append(*args, after.At, after.ID)
		where += fmt.Sprintf(" AND e.received_at <= $%d AND (e.received_at, e.id) < ($%d, $%d)", len(*args)-1, len(*args)-1, len(*args))
	}
	var branches []string
	for _, st := range f.statusList() {
		branches = append(branches, fmt.Sprintf("(SELECT %s FROM webhooks.inbox AS e WHERE e.status = '%s' AND %s ORDER BY e.received_at DESC, e.id DESC LIMIT %d)",
			cols, st, where, limit))
		if st == "processed" {
			branches = append(branches, fmt.Sprintf("(SELECT %s FROM webhooks.history AS e WHERE %s ORDER BY e.received_at DESC, e.id DESC LIMIT %d)",
				cols, where, limit))
		}
	}
	return fmt.Sprintf("SELECT * FROM (%s) AS page ORDER BY received_at DESC, id DESC LIMIT %d", strings.Join(branches, " UNION ALL "), limit)
}

// CountSQL counts the filter's events per status, each count stopping at
// CountCap+1 (one bounded index range scan per status; processed adds
// history's, newest day first).
func (f *Filter) CountSQL(now time.Time, args *[]any) string {
	where := f.where(now, args)
	var parts []string
	for _, st := range f.statusList() {
		from := fmt.Sprintf("SELECT 1 FROM webhooks.inbox AS e WHERE e.status = '%s' AND %s LIMIT %d", st, where, CountCap+1)
		if st == "processed" {
			from = fmt.Sprintf("(%s) UNION ALL (SELECT 1 FROM webhooks.history AS e WHERE %s ORDER BY e.received_at DESC, e.id DESC LIMIT %d) LIMIT %d",
				from, where, CountCap+1, CountCap+1)
		}
		parts = append(parts, fmt.Sprintf("SELECT '%s'::text, (SELECT count(*) FROM (%s) AS c)", st, from))
	}
	return strings.Join(parts, " UNION ALL ")
}

// List is a parsed GET /events or /api/events.
type List struct {
	Filter Filter
	Limit  int
	After  *Cursor // keyset: events older than this one
}

// ParseList reads the filter, limit and cursor of a list request.
func ParseList(q url.Values) (List, error) {
	lr := List{Limit: DefaultLimit}
	var err error
	if lr.Filter, err = Parse(q); err != nil {
		return lr, err
	}
	if v := strings.TrimSpace(q.Get("limit")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return lr, bad("limit: %q is not a number from 1 to %d", v, maxLimit)
		}
		lr.Limit = n
	}
	if v := strings.TrimSpace(q.Get("cursor")); v != "" {
		if lr.After, err = decodeCursor(v); err != nil {
			return lr, err
		}
	}
	return lr, nil
}
