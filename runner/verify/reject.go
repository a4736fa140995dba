package verify

import "github.com/pginbox/pginbox/internal/provider/sig"

// RejectError is a delivery rejected before anything is written: Status is
// the HTTP status to answer with (401 or 400), Reason one of the Reason*
// constants (short, fixed and lower-case, so it is safe as a Prometheus label
// value and in a response body; it never contains a secret, a header value
// or any part of the body). Verify returns only 401 rejections and Identify
// only 400 rejections, so an HTTP handler can answer with Status and
// {"error": Reason} as they are.
type RejectError = sig.RejectError

// Reasons for a 401 (returned by Provider.Verify).
const (
	// ReasonSignatureMissing ("signature missing") means the signature header is absent or blank.
	ReasonSignatureMissing = sig.ReasonSignatureMissing
	// ReasonSignatureMalformed ("signature malformed") means the signature header holds no well-formed
	// signature of the scheme's current version.
	ReasonSignatureMalformed = sig.ReasonSignatureMalformed
	// ReasonSignatureMismatch ("signature mismatch") means no signature matches any configured secret.
	ReasonSignatureMismatch = sig.ReasonSignatureMismatch
	// ReasonTimestampMissing ("timestamp missing") means the scheme signs a timestamp and none was sent.
	ReasonTimestampMissing = sig.ReasonTimestampMissing
	// ReasonTimestampMalformed ("timestamp malformed") means the timestamp is not unix seconds in decimal digits.
	ReasonTimestampMalformed = sig.ReasonTimestampMalformed
	// ReasonSignatureHeaderTooLarge ("signature header too large") means the signature header is over
	// MaxSignatureHeaderBytes: refused before any HMAC is computed.
	ReasonSignatureHeaderTooLarge = sig.ReasonSignatureHeaderTooLarge
	// ReasonTooManySignatures ("too many signatures") means the signature header lists more than
	// MaxSignatures signatures: refused before any HMAC is computed.
	ReasonTooManySignatures = sig.ReasonTooManySignatures
	// ReasonTooManyAsymmetricSignatures ("too many asymmetric signatures") means the signature
	// header lists more than MaxAsymmetricSignatures asymmetric signatures (standardwebhooks v1a):
	// refused before any signature is verified.
	ReasonTooManyAsymmetricSignatures = sig.ReasonTooManyAsymmetricSignatures
	// ReasonTimestampOutOfTolerance ("timestamp out of tolerance") means the signed timestamp is more than
	// five minutes before or after now: refused before any signature is computed, so the signatures
	// may be anything.
	ReasonTimestampOutOfTolerance = sig.ReasonTimestampOutOfTolerance
)

// Reasons for a 400 (returned by Provider.Identify).
const (
	// ReasonBodyNotJSON ("body not json") means the body is not one JSON object that Postgres jsonb
	// accepts (invalid JSON or UTF-8, not an object, empty, trailing data,
	// a \u0000 escape or an unpaired surrogate escape).
	ReasonBodyNotJSON = sig.ReasonBodyNotJSON
	// ReasonBodyTooDeep ("body nested too deep") means the body nests objects and arrays deeper than
	// MaxJSONDepth levels.
	ReasonBodyTooDeep = sig.ReasonBodyTooDeep
	// ReasonKeyMissing ("idempotency key missing") means none of the places the kind takes its idempotency key from has one.
	ReasonKeyMissing = sig.ReasonKeyMissing
	// ReasonKeyInvalid ("idempotency key invalid") means the idempotency key is not a non-blank string or
	// integer of at most 255 bytes without control characters.
	ReasonKeyInvalid = sig.ReasonKeyInvalid
	// ReasonEventIDMismatch ("event id mismatch") means Sume's unsigned X-Sume-Event-Id header disagrees
	// with the signed top-level body id.
	ReasonEventIDMismatch = sig.ReasonEventIDMismatch
	// ReasonEventTypeMissing ("event type missing") means the delivery carries no event type.
	ReasonEventTypeMissing = sig.ReasonEventTypeMissing
	// ReasonEventTypeInvalid ("event type invalid") means the event type is blank, longer than 255 bytes
	// or contains control characters.
	ReasonEventTypeInvalid = sig.ReasonEventTypeInvalid
)
