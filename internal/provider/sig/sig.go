package sig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Provider verifies deliveries of one configured provider and extracts their
// idempotency key. Its methods are safe for concurrent use.
type Provider interface {
	// Kind returns the provider kind: "sume", "stripe", ...
	Kind() string
	// Verify checks the signature over the exact raw body bytes with any of
	// the configured secrets (rotation: valid if any secret verifies). now is
	// used for the timestamp tolerance (5 minutes both ways) where the scheme
	// signs a timestamp in a header, checked before any signature is
	// computed. Signatures are compared in constant time. Every error is a
	// *RejectError with Status 401.
	Verify(h http.Header, body []byte, now time.Time) error
	// Identify parses the (already verified) body and headers and returns the
	// idempotency key and the event type. Every error is a *RejectError with
	// Status 400.
	Identify(h http.Header, body []byte) (Delivery, error)
}

// Delivery is what Provider.Identify extracts from a delivery.
type Delivery struct {
	// ExternalID is the provider's idempotency key: non-blank valid UTF-8 of
	// at most 255 bytes without control characters.
	ExternalID string
	// EventType is the provider's event type, with the same constraints as ExternalID.
	EventType string
	// Payload is the body, unchanged, validated as a JSON object Postgres
	// jsonb accepts. It shares memory with the body passed to Identify.
	Payload json.RawMessage
	// KeySigned reports whether the signature covers ExternalID: true for
	// stripe and standardwebhooks, and for sume keyed by a body id; false for
	// github and shopify (X-GitHub-Delivery, X-Shopify-Event-Id) and for sume
	// keyed by X-Sume-Event-Id. An unsigned key proves nothing: anyone holding
	// one captured delivery can send it again under a fresh key. Callers then
	// pass the body's SHA-256 to webhooks.ingest_webhook (body_sha256), which
	// answers a body already stored under another key as a duplicate and never
	// lets a different body replace a stored one.
	KeySigned bool
	// Handshake, when not nil, says the delivery is the provider checking
	// the endpoint, not an event (slack's url_verification): the receiver
	// answers 200 with Handshake as its JSON body and stores nothing.
	// ExternalID and EventType are then empty.
	Handshake json.RawMessage
}

// MaxSignatureHeaderBytes, MaxSignatures and MaxAsymmetricSignatures bound
// the work one unauthenticated delivery can cause: every signature is
// compared with the MAC of every secret, every asymmetric one verified with
// every public key. A signature header (its first value) over
// MaxSignatureHeaderBytes, listing more than MaxSignatures entries, or more
// than MaxAsymmetricSignatures asymmetric ones (standardwebhooks v1a, Ed25519),
// is refused before any signature is computed. Providers send one signature
// per active secret (two while rotating); an Ed25519 verification costs
// milliseconds in SQL, hence the tight bound on those.
// webhooks.ingest_signed applies the same bounds.
const (
	MaxSignatureHeaderBytes = 4096
	MaxSignatures           = 8
	MaxAsymmetricSignatures = 2
)

// CheckBounds refuses a signature header over MaxSignatureHeaderBytes or with
// more than MaxSignatures entries.
func CheckBounds(header string, entries int) error {
	if len(header) > MaxSignatureHeaderBytes {
		return Unauthorized(ReasonSignatureHeaderTooLarge)
	}
	if entries > MaxSignatures {
		return Unauthorized(ReasonTooManySignatures)
	}
	return nil
}

// tolerance is how far a signed timestamp may be from now, in either direction.
const tolerance = 5 * time.Minute

// maxTextBytes is the longest idempotency key or event type accepted, in bytes
// (the limit webhooks.ingest_webhook enforces).
const maxTextBytes = 255

// MinSecretBytes is the shortest secret New accepts, in bytes (for
// standardwebhooks, of the key decoded from the secret): a shorter HMAC key
// can be guessed offline from one captured delivery.
const MinSecretBytes = 16

// Keys holds one HMAC-SHA256 key per configured secret.
type Keys [][]byte

// RawKeys uses each secret's bytes as an HMAC key.
func RawKeys(secrets []string) Keys {
	keys := make(Keys, len(secrets))
	for i, s := range secrets {
		keys[i] = []byte(s)
	}
	return keys
}

// Match reports whether any of sigs is the HMAC-SHA256, under any of the keys,
// of prefix followed by body. Each comparison is constant time. No MAC is
// computed when sigs is empty.
func (k Keys) Match(sigs [][]byte, prefix string, body []byte) bool {
	if len(sigs) == 0 {
		return false
	}
	var buf [sha256.Size]byte
	for _, key := range k {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(prefix))
		m.Write(body)
		sum := m.Sum(buf[:0])
		for _, sig := range sigs {
			if hmac.Equal(sum, sig) {
				return true
			}
		}
	}
	return false
}

// ParseTimestamp parses unix seconds written as 1 to 18 decimal digits (no
// sign, no spaces), so a signed "+1614265330" or " 1614265330" is refused
// rather than silently normalised.
func ParseTimestamp(s string) (int64, error) {
	if s == "" {
		return 0, Unauthorized(ReasonTimestampMissing)
	}
	if len(s) > 18 {
		return 0, Unauthorized(ReasonTimestampMalformed)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, Unauthorized(ReasonTimestampMalformed)
		}
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, Unauthorized(ReasonTimestampMalformed)
	}
	return ts, nil
}

// CheckTolerance rejects a timestamp more than tolerance before or after now.
// Verifiers call it before computing any signature, so a stale or future
// delivery costs a comparison, whatever it carries.
func CheckTolerance(ts int64, now time.Time) error {
	d := now.Unix() - ts
	if d < 0 {
		d = -d
	}
	if d > int64(tolerance/time.Second) {
		return Unauthorized(ReasonTimestampOutOfTolerance)
	}
	return nil
}

// CheckToleranceMillis rejects a timestamp in unix milliseconds (linear's
// webhookTimestamp) more than tolerance before or after now.
func CheckToleranceMillis(ms int64, now time.Time) error {
	d := now.UnixMilli() - ms
	if d < 0 {
		d = -d
	}
	if d > tolerance.Milliseconds() {
		return Unauthorized(ReasonTimestampOutOfTolerance)
	}
	return nil
}
