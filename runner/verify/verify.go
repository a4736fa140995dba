package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
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
	// signs a timestamp. Signatures are compared in constant time. Every error
	// is a *RejectError with Status 401.
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
}

// MaxSignatureHeaderBytes and MaxSignatures bound the work one
// unauthenticated delivery can cause: every signature is compared with the
// MAC of every secret. A signature header (its first value) over
// MaxSignatureHeaderBytes, or listing more than MaxSignatures entries, is
// refused before any MAC is computed. Providers send one signature per active
// secret (two while rotating). webhooks.ingest_signed applies the same bounds.
const (
	MaxSignatureHeaderBytes = 4096
	MaxSignatures           = 8
)

// checkBounds refuses a signature header over MaxSignatureHeaderBytes or with
// more than MaxSignatures entries.
func checkBounds(header string, entries int) error {
	if len(header) > MaxSignatureHeaderBytes {
		return unauthorized(ReasonSignatureHeaderTooLarge)
	}
	if entries > MaxSignatures {
		return unauthorized(ReasonTooManySignatures)
	}
	return nil
}

// tolerance is how far a signed timestamp may be from now, in either direction.
const tolerance = 5 * time.Minute

// maxTextBytes is the longest idempotency key or event type accepted, in bytes
// (the limit webhooks.ingest_webhook enforces).
const maxTextBytes = 255

// kinds maps each provider kind to its constructor. New has already
// checked that there is at least one secret and that none is empty. Adding a
// provider kind is one <kind>.go file and one entry here.
var kinds = map[string]func(secrets []string) (Provider, error){
	"github":           newGitHub,
	"shopify":          newShopify,
	"standardwebhooks": newStandardWebhooks,
	"stripe":           newStripe,
	"sume":             newSume,
}

// MinSecretBytes is the shortest secret New accepts, in bytes (for
// standardwebhooks, of the key decoded from the secret): a shorter HMAC key
// can be guessed offline from one captured delivery.
const MinSecretBytes = 16

// New builds a provider of the given kind that accepts deliveries
// signed with any of secrets. It fails on an unknown kind, no secrets, an
// empty secret, a secret shorter than MinSecretBytes or a secret the kind
// cannot use (a standardwebhooks secret that is not base64 after its optional
// "whsec_" prefix). Errors never contain a secret.
func New(kind string, secrets []string) (Provider, error) {
	newKind, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown provider kind %q (supported: %s)", kind, strings.Join(Kinds(), ", "))
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("provider kind %s: no secrets", kind)
	}
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("provider kind %s: secret %d of %d is empty", kind, i+1, len(secrets))
		}
		if kind != "standardwebhooks" && len(s) < MinSecretBytes {
			return nil, fmt.Errorf("provider kind %s: secret %d of %d is %d bytes, shorter than the %d required",
				kind, i+1, len(secrets), len(s), MinSecretBytes)
		}
	}
	return newKind(secrets)
}

// Kinds returns the supported provider kinds, sorted.
func Kinds() []string {
	names := make([]string, 0, len(kinds))
	for name := range kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// macKeys holds one HMAC-SHA256 key per configured secret.
type macKeys [][]byte

// rawKeys uses each secret's bytes as an HMAC key.
func rawKeys(secrets []string) macKeys {
	keys := make(macKeys, len(secrets))
	for i, s := range secrets {
		keys[i] = []byte(s)
	}
	return keys
}

// match reports whether any of sigs is the HMAC-SHA256, under any of the keys,
// of prefix followed by body. Each comparison is constant time.
func (k macKeys) match(sigs [][]byte, prefix string, body []byte) bool {
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

// parseTimestamp parses unix seconds written as 1 to 18 decimal digits (no
// sign, no spaces), so a signed "+1614265330" or " 1614265330" is refused
// rather than silently normalised.
func parseTimestamp(s string) (int64, error) {
	if s == "" {
		return 0, unauthorized(ReasonTimestampMissing)
	}
	if len(s) > 18 {
		return 0, unauthorized(ReasonTimestampMalformed)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, unauthorized(ReasonTimestampMalformed)
		}
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, unauthorized(ReasonTimestampMalformed)
	}
	return ts, nil
}

// checkTolerance rejects a timestamp more than tolerance before or after now.
func checkTolerance(ts int64, now time.Time) error {
	d := now.Unix() - ts
	if d < 0 {
		d = -d
	}
	if d > int64(tolerance/time.Second) {
		return unauthorized(ReasonTimestampOutOfTolerance)
	}
	return nil
}
