package backfill

import "github.com/pginbox/pginbox/internal/provider/api"

// The types a provider API client implements and returns live in package
// [api] (internal/provider/api), which the provider kinds' clients import
// (they cannot import this package: [APIs] and [EventLogs] build them). They are named here too,
// so a pass's callers need only this package.

// Gap is an expected event that did not arrive by its deadline: one row of
// webhooks.find_gaps() ([api.Gap]).
type Gap = api.Gap

// StatusAPI asks one provider's API about a gap ([api.StatusAPI]).
type StatusAPI = api.StatusAPI

// EventLog lists what one provider sent ([api.EventLog]).
type EventLog = api.EventLog

// LogEntry is one event of a provider's log ([api.LogEntry]).
type LogEntry = api.LogEntry

// LogPage is one page of a provider's log ([api.LogPage]).
type LogPage = api.LogPage

// Lookup is a provider API's definite answer about one gap ([api.Lookup]).
type Lookup = api.Lookup

// LookupState is what a provider's API said about a gap ([api.LookupState]).
type LookupState = api.LookupState

// The states of a [Lookup].
const (
	LookupPending  = api.LookupPending
	LookupTerminal = api.LookupTerminal
	LookupUnknown  = api.LookupUnknown
)

// APIError is a provider API call that gave no answer ([api.APIError]).
type APIError = api.APIError

// MalformedError is a response that is not a usable answer ([api.MalformedError]).
type MalformedError = api.MalformedError

// RefusedError is a request backfill would not make, or an answer it would
// not take ([api.RefusedError]).
type RefusedError = api.RefusedError

// Reasons of a [RefusedError], the reason label of pginbox_backfill_refused_total.
const (
	RefusedForeignOrigin = api.RefusedForeignOrigin
	RefusedBadStatusURL  = api.RefusedBadStatusURL
	RefusedRedirect      = api.RefusedRedirect
	RefusedDial          = api.RefusedDial
)

// ErrUnauthorized is matched (errors.Is) by an *APIError for 401 or 403
// ([api.ErrUnauthorized]).
var ErrUnauthorized = api.ErrUnauthorized

// Origin is the scheme, host and port of a provider's API URL ([api.Origin]).
type Origin = api.Origin

// ParseOrigin returns the origin of an absolute http(s) URL ([api.ParseOrigin]).
func ParseOrigin(raw string) (Origin, error) { return api.ParseOrigin(raw) }

// DialRefusedError is a connection the guarded client would not open
// ([api.DialRefusedError]).
type DialRefusedError = api.DialRefusedError
