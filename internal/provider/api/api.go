package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Gap is an expected event that did not arrive by its deadline: one row of
// webhooks.find_gaps().
type Gap struct {
	// Provider is the provider the event was expected from.
	Provider string `json:"provider"`
	// ExternalID is the provider's id of the expected event.
	ExternalID string `json:"external_id"`
	// StatusURL is the provider's status URL given to webhooks.expect, empty
	// when none was given or the caller may not read it.
	StatusURL string `json:"status_url,omitempty"`
	// Deadline is when the event should have arrived by.
	Deadline time.Time `json:"deadline"`
	// Backfill is what a backfill pass would do with the gap ([Verdict]);
	// FindGaps leaves it empty.
	Backfill string `json:"backfill,omitempty" db:"-"`
}

// LookupState is what a provider's API said about a gap.
type LookupState int

const (
	// LookupPending means the provider knows the id and it is not finished
	// yet: backfill postpones the expectation's deadline.
	LookupPending LookupState = iota + 1
	// LookupTerminal means the provider reports a final state: backfill
	// ingests it as the event a webhook would have delivered.
	LookupTerminal
	// LookupUnknown means the provider does not know the id (Sume: 404):
	// backfill tombstones it.
	LookupUnknown
)

// String returns "pending", "terminal" or "unknown".
func (s LookupState) String() string {
	switch s {
	case LookupPending:
		return "pending"
	case LookupTerminal:
		return "terminal"
	case LookupUnknown:
		return "unknown"
	}
	return fmt.Sprintf("LookupState(%d)", int(s))
}

// Lookup is a provider API's definite answer about one gap.
type Lookup struct {
	State LookupState
	// EventType is the event a webhook would have carried (LookupTerminal only).
	EventType string
	// Status is the provider's own status word, as reported (e.g. "IN_PROGRESS").
	Status string
	// Payload is the provider's response, a JSON object Postgres jsonb
	// accepts; it becomes the event's payload (LookupTerminal only).
	Payload json.RawMessage
}

// StatusAPI asks one provider's API about a gap (the per-id shape of a
// provider API; Sume's job status API is one). A kind's client implementing
// it lives in internal/provider/<kind> and is named in the list of kinds
// (internal/provider), which backfill.APIs reads.
//
// Lookup returns a *Lookup for a definite answer only. Everything else is an
// error: an *APIError for an HTTP status that is not an answer or a transport
// failure (backfill.Run retries those whose Retryable is true), a *MalformedError
// for a response it cannot read, a *RefusedError for a request it would not
// make (a status_url on another origin) or an answer it does not trust (a
// redirect). ctx carries the per-request timeout.
//
// Vet returns the *RefusedError Lookup would return without a request, or
// nil: the gaps listing shows it.
type StatusAPI interface {
	Lookup(ctx context.Context, gap Gap) (Lookup, error)
	Vet(gap Gap) error
}

// Reasons of a *RefusedError, the reason label of
// pginbox_backfill_refused_total.
const (
	// RefusedForeignOrigin: the expectation's status_url is not on the
	// origin of the provider's PGINBOX_API_URL_<NAME>.
	RefusedForeignOrigin = "foreign_origin"
	// RefusedBadStatusURL: the status_url is not an absolute http(s) URL.
	RefusedBadStatusURL = "bad_status_url"
	// RefusedRedirect: the API answered with a redirect, which is not followed.
	RefusedRedirect = "redirect"
	// RefusedDial: the address to connect to is not the configured origin's,
	// or is link-local or a cloud metadata address the origin does not name.
	RefusedDial = "dial_refused"
)

// RefusedError is a request backfill would not make, or an answer it would
// not take: nothing changes, the gap stays open, and the pass counts it by
// provider and Reason.
type RefusedError struct {
	Provider   string
	ExternalID string
	// Reason is one of the Refused* constants.
	Reason string
	// Detail says what was refused, for the log (never the key).
	Detail string
}

// Error names the provider, the id, the reason and the detail.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s API: %s: refused (%s): %s", e.Provider, e.ExternalID, e.Reason, e.Detail)
}

// ErrUnauthorized is matched (errors.Is) by an *APIError for 401 or 403.
var ErrUnauthorized = errors.New("the provider refused the API key")

// APIError is a provider API call that gave no answer: an HTTP status other
// than the API's definite answers, or a transport failure (StatusCode 0).
type APIError struct {
	// Provider is the provider whose API was called.
	Provider string
	// ExternalID is the id the call asked about.
	ExternalID string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// RetryAfter is the response's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Timeout reports that the request timed out.
	Timeout bool
	// Err is the transport error, nil when a response arrived.
	Err error
}

// Error names the provider, the id and what went wrong; never the API key.
func (e *APIError) Error() string {
	switch {
	case e.StatusCode != 0:
		return fmt.Sprintf("%s API: %s: HTTP %d", e.Provider, e.ExternalID, e.StatusCode)
	case e.Timeout:
		return fmt.Sprintf("%s API: %s: timed out", e.Provider, e.ExternalID)
	default:
		return fmt.Sprintf("%s API: %s: %v", e.Provider, e.ExternalID, e.Err)
	}
}

// Unwrap returns the transport error.
func (e *APIError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnauthorized and the status is 401 or 403.
func (e *APIError) Is(target error) bool {
	return target == ErrUnauthorized && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// Retryable reports whether asking again may get an answer: a 5xx, 429 or
// 408, a timeout or another transport failure.
func (e *APIError) Retryable() bool {
	switch {
	case e.StatusCode == 0:
		return true
	case e.StatusCode >= 500, e.StatusCode == http.StatusTooManyRequests, e.StatusCode == http.StatusRequestTimeout:
		return true
	}
	return false
}

// MalformedError is a response that is not a usable answer: not a JSON
// object, no status, an id other than the one asked about. backfill.Run logs and
// counts it and changes nothing: it never guesses.
type MalformedError struct {
	// Provider is the provider whose API answered.
	Provider string
	// ExternalID is the id the call asked about.
	ExternalID string
	// Reason says what is wrong with the response.
	Reason string
}

// Error names the provider, the id and the reason.
func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s API: %s: malformed response: %s", e.Provider, e.ExternalID, e.Reason)
}

// EventLog is the other shape of provider API: instead of answering about
// one id ([StatusAPI]), it lists what the provider sent (Stripe's event list,
// a GitHub App's delivery log), newest first. No expectation is needed: the
// provider's own log is what should have arrived. A kind's client
// implementing it lives in internal/provider/<kind> and is named in the list
// of kinds (internal/provider), which backfill.EventLogs reads.
//
// Errors are those of StatusAPI: *APIError (retried when Retryable),
// *MalformedError (the page is not applied), *RefusedError. One listed
// entry that cannot be stored is not an error of the page: it is returned
// with Skip set, and the pass passes over it.
type EventLog interface {
	// Provider names the provider, as in PGINBOX_PROVIDERS.
	Provider() string
	// Page returns one page of the log: with cursor "", the newest page of
	// entries created at or after since; else the page after cursor. A
	// page whose envelope cannot be read (not a list, no way to the next
	// page) is a *MalformedError and is not applied at all; an entry of a
	// readable page that cannot be stored (malformed, too deep, a string
	// Postgres refuses) is returned with Skip set, so it never blocks the
	// entries around it. Next is "" on the last page.
	Page(ctx context.Context, since time.Time, cursor string) (LogPage, error)
	// Fetch completes an entry whose NeedsFetch is set (GitHub: the
	// delivery's recorded request), returning it with EventType and Payload.
	Fetch(ctx context.Context, e LogEntry) (LogEntry, error)
}

// LogEntry is one event of a provider's log.
type LogEntry struct {
	// Key is the idempotency key a webhook of the event carries (Stripe:
	// the event id; GitHub: the delivery guid, X-GitHub-Delivery).
	Key string
	// Created is when the provider created (GitHub: delivered) it.
	Created time.Time
	// EventType and Payload are what a webhook would carry; empty until
	// fetched when NeedsFetch is set.
	EventType string
	Payload   json.RawMessage
	// NeedsFetch says the listing lacks the payload: Fetch gets it, and only
	// for keys not stored yet.
	NeedsFetch bool
	// Ref is the adapter's own reference for Fetch (GitHub: the delivery id).
	Ref string
	// Skip, when not "", says why the entry cannot be stored: the pass
	// logs it, counts it and passes over it. Key and Created are set when
	// they could be read (zero otherwise).
	Skip string
}

// LogPage is one page of a log, newest first.
type LogPage struct {
	Entries []LogEntry
	// Next is the cursor of the following page, "" on the last one.
	Next string
	// ServedAt is the provider's clock when it served the page (its Date
	// header), zero when absent: a checkpoint is never set later than what
	// the provider itself has seen, whatever the local clock says.
	ServedAt time.Time
}

// ServedAt reads a response's Date header: zero when absent or unreadable.
func ServedAt(h http.Header) time.Time {
	t, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Prober is implemented by an [EventLog] that can ask cheaply whether its
// API answers: one request for the smallest page the API serves (Stripe:
// limit=1). Backfill probes a provider it is backing off with it; an
// EventLog without it is probed with its first [EventLog.Page]. Probe
// returns nil for an answer the log could be read from, else the error
// Page would return.
type Prober interface {
	Probe(ctx context.Context) error
}
