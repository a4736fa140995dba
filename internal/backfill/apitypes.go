package backfill

import "github.com/pginbox/pginbox/internal/backfill/apiclient"

// The types a provider API client implements and returns live in
// [apiclient], which the provider kinds' clients import (they cannot import
// this package: [APIs] and [EventLogs] build them). They are named here too,
// so a pass's callers need only this package.

// Gap is an expected event that did not arrive by its deadline: one row of
// webhooks.find_gaps() ([apiclient.Gap]).
type Gap = apiclient.Gap

// StatusAPI asks one provider's API about a gap ([apiclient.StatusAPI]).
type StatusAPI = apiclient.StatusAPI

// EventLog lists what one provider sent ([apiclient.EventLog]).
type EventLog = apiclient.EventLog

// LogEntry is one event of a provider's log ([apiclient.LogEntry]).
type LogEntry = apiclient.LogEntry

// LogPage is one page of a provider's log ([apiclient.LogPage]).
type LogPage = apiclient.LogPage

// Lookup is a provider API's definite answer about one gap ([apiclient.Lookup]).
type Lookup = apiclient.Lookup

// LookupState is what a provider's API said about a gap ([apiclient.LookupState]).
type LookupState = apiclient.LookupState

// The states of a [Lookup].
const (
	LookupPending  = apiclient.LookupPending
	LookupTerminal = apiclient.LookupTerminal
	LookupUnknown  = apiclient.LookupUnknown
)

// APIError is a provider API call that gave no answer ([apiclient.APIError]).
type APIError = apiclient.APIError

// MalformedError is a response that is not a usable answer ([apiclient.MalformedError]).
type MalformedError = apiclient.MalformedError

// RefusedError is a request backfill would not make, or an answer it would
// not take ([apiclient.RefusedError]).
type RefusedError = apiclient.RefusedError

// Reasons of a [RefusedError], the reason label of pginbox_backfill_refused_total.
const (
	RefusedForeignOrigin = apiclient.RefusedForeignOrigin
	RefusedBadStatusURL  = apiclient.RefusedBadStatusURL
	RefusedRedirect      = apiclient.RefusedRedirect
	RefusedDial          = apiclient.RefusedDial
)

// ErrUnauthorized is matched (errors.Is) by an *APIError for 401 or 403
// ([apiclient.ErrUnauthorized]).
var ErrUnauthorized = apiclient.ErrUnauthorized

// Origin is the scheme, host and port of a provider's API URL ([apiclient.Origin]).
type Origin = apiclient.Origin

// ParseOrigin returns the origin of an absolute http(s) URL ([apiclient.ParseOrigin]).
func ParseOrigin(raw string) (Origin, error) { return apiclient.ParseOrigin(raw) }

// DialRefusedError is a connection the guarded client would not open
// ([apiclient.DialRefusedError]).
type DialRefusedError = apiclient.DialRefusedError
