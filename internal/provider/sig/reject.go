package sig

import (
	"net/http"
	"strconv"
)

// RejectError is a delivery rejected before anything is written. Verify returns
// only 401 rejections and Identify only 400 rejections, so an HTTP handler can
// answer with Status and {"error": Reason} as they are.
type RejectError struct {
	// Status is the HTTP status to answer with: 401 or 400.
	Status int
	// Reason is one of the Reason* constants: short, fixed and lower-case, so it
	// is safe as a Prometheus label value and in a response body. It never
	// contains a secret, a header value or any part of the body.
	Reason string
}

// Error returns the status and the reason, e.g. "rejected with 401: signature mismatch".
func (e *RejectError) Error() string {
	return "rejected with " + strconv.Itoa(e.Status) + ": " + e.Reason
}

// Reasons for a 401 (returned by Provider.Verify).
const (
	// ReasonSignatureMissing means the signature header is absent or blank.
	ReasonSignatureMissing = "signature missing"
	// ReasonSignatureMalformed means the signature header holds no well-formed
	// signature of the scheme's current version.
	ReasonSignatureMalformed = "signature malformed"
	// ReasonSignatureMismatch means no signature matches any configured secret.
	ReasonSignatureMismatch = "signature mismatch"
	// ReasonTimestampMissing means the scheme signs a timestamp and none was sent.
	ReasonTimestampMissing = "timestamp missing"
	// ReasonTimestampMalformed means the timestamp is not unix seconds in decimal digits.
	ReasonTimestampMalformed = "timestamp malformed"
	// ReasonSignatureHeaderTooLarge means the signature header is over
	// MaxSignatureHeaderBytes: refused before any HMAC is computed.
	ReasonSignatureHeaderTooLarge = "signature header too large"
	// ReasonTooManySignatures means the signature header lists more than
	// MaxSignatures signatures: refused before any HMAC is computed.
	ReasonTooManySignatures = "too many signatures"
	// ReasonTooManyAsymmetricSignatures means the signature header lists
	// more than MaxAsymmetricSignatures asymmetric signatures (standardwebhooks
	// v1a): refused before any signature is verified.
	ReasonTooManyAsymmetricSignatures = "too many asymmetric signatures"
	// ReasonTimestampOutOfTolerance means the signed timestamp is more than
	// five minutes before or after now: refused before any signature is
	// computed, so the signatures may be anything.
	ReasonTimestampOutOfTolerance = "timestamp out of tolerance"
)

// Reasons for a 400 (returned by Provider.Identify).
const (
	// ReasonBodyNotJSON means the body is not one JSON object that Postgres jsonb
	// accepts (invalid JSON or UTF-8, not an object, empty, trailing data,
	// a \u0000 escape or an unpaired surrogate escape).
	ReasonBodyNotJSON = "body not json"
	// ReasonBodyTooDeep means the body nests objects and arrays deeper than
	// MaxJSONDepth levels.
	ReasonBodyTooDeep = "body nested too deep"
	// ReasonKeyMissing means none of the places the kind takes its idempotency key from has one.
	ReasonKeyMissing = "idempotency key missing"
	// ReasonKeyInvalid means the idempotency key is not a non-blank string or
	// integer of at most 255 bytes without control characters.
	ReasonKeyInvalid = "idempotency key invalid"
	// ReasonEventIDMismatch means Sume's unsigned X-Sume-Event-Id header disagrees
	// with the signed top-level body id.
	ReasonEventIDMismatch = "event id mismatch"
	// ReasonEventTypeMissing means the delivery carries no event type.
	ReasonEventTypeMissing = "event type missing"
	// ReasonEventTypeInvalid means the event type is blank, longer than 255 bytes
	// or contains control characters.
	ReasonEventTypeInvalid = "event type invalid"
)

// Unauthorized returns a 401 rejection.
func Unauthorized(reason string) error {
	return &RejectError{Status: http.StatusUnauthorized, Reason: reason}
}

// BadRequest returns a 400 rejection.
func BadRequest(reason string) error {
	return &RejectError{Status: http.StatusBadRequest, Reason: reason}
}
