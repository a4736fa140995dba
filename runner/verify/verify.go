package verify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pginbox/pginbox/internal/provider"
	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/sig"
)

// Provider verifies deliveries of one configured provider and extracts their
// idempotency key. Its methods are safe for concurrent use:
//
//   - Kind returns the provider kind: "sume", "stripe", ...
//   - Verify(h, body, now) checks the signature over the exact raw body
//     bytes with any of the configured secrets (rotation: valid if any
//     secret verifies). now is used for the timestamp tolerance (5 minutes
//     both ways) where the scheme signs a timestamp in a header, checked
//     before any signature is computed. Signatures are compared in constant
//     time. Every error is a *RejectError with Status 401.
//   - Identify(h, body) parses the (already verified) body and headers and
//     returns the idempotency key and the event type. Every error is a
//     *RejectError with Status 400.
type Provider = sig.Provider

// Delivery is what Provider.Identify extracts from a delivery: ExternalID
// (the provider's idempotency key), EventType, Payload (the body, unchanged,
// validated as a JSON object Postgres jsonb accepts) and KeySigned (whether
// the signature covers ExternalID: true for stripe and standardwebhooks, and
// for sume keyed by a body id; false for github, shopify and sume keyed by
// X-Sume-Event-Id, whose callers pass the body's SHA-256 to
// webhooks.ingest_webhook).
type Delivery = sig.Delivery

// MaxSignatureHeaderBytes, MaxSignatures and MaxAsymmetricSignatures bound
// the work one unauthenticated delivery can cause: every signature is
// compared with the MAC of every secret, every asymmetric one verified with
// every public key. A signature header (its first value) over
// MaxSignatureHeaderBytes, listing more than MaxSignatures entries, or more
// than MaxAsymmetricSignatures asymmetric ones (standardwebhooks v1a, Ed25519),
// is refused before any signature is computed; so is a timestamp more than 5
// minutes from now. Providers send one signature per active secret (two while
// rotating). webhooks.ingest_signed applies the same bounds.
const (
	MaxSignatureHeaderBytes = sig.MaxSignatureHeaderBytes
	MaxSignatures           = sig.MaxSignatures
	MaxAsymmetricSignatures = sig.MaxAsymmetricSignatures
)

// MinSecretBytes is the shortest secret New accepts, in bytes (for
// standardwebhooks, of the key decoded from the secret): a shorter HMAC key
// can be guessed offline from one captured delivery.
const MinSecretBytes = sig.MinSecretBytes

// New builds a provider of the given kind that accepts deliveries
// signed with any of secrets. It fails on an unknown kind, no secrets, an
// empty secret, a secret shorter than MinSecretBytes or a secret the kind
// cannot use (a standardwebhooks secret that is not base64 after its optional
// "whsec_" prefix), and for a kind that signs the URL it is posted to
// (square: use [NewWithURL]). Errors never contain a secret.
func New(kind string, secrets []string) (Provider, error) { return NewWithURL(kind, secrets, "") }

// NewWithURL is [New] for a provider posting to url, the exact public URL
// the provider was given (PGINBOX_URL_<NAME>). Kinds whose scheme signs it
// (square) need it; the others ignore it.
func NewWithURL(kind string, secrets []string, url string) (Provider, error) {
	k, ok := provider.Lookup(kind)
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
		if !k.DecodesSecrets && len(s) < MinSecretBytes {
			return nil, fmt.Errorf("provider kind %s: secret %d of %d is %d bytes, shorter than the %d required",
				kind, i+1, len(secrets), len(s), MinSecretBytes)
		}
	}
	if k.NewURLVerifier != nil {
		p, err := k.NewURLVerifier(url, secrets)
		if err != nil {
			return nil, fmt.Errorf("provider kind %s: %w", kind, urlError{err})
		}
		return p, nil
	}
	return k.NewVerifier(secrets)
}

// ErrURL is what an error of [NewWithURL] about the URL (missing, or not an
// absolute http or https URL) matches with errors.Is.
var ErrURL = errors.New("provider URL")

// urlError is an error about the URL a kind signs.
type urlError struct{ err error }

func (e urlError) Error() string        { return e.err.Error() }
func (e urlError) Unwrap() error        { return e.err }
func (e urlError) Is(target error) bool { return target == ErrURL }

// SignsURL reports whether kind's scheme signs the URL the provider posts
// to, so that [NewWithURL] needs it (square).
func SignsURL(kind string) bool {
	k, ok := provider.Lookup(kind)
	return ok && k.NewURLVerifier != nil
}

// Kinds returns the supported provider kinds, sorted.
func Kinds() []string { return provider.Names() }

// GitHubEventType returns the event type a GitHub webhook delivery is
// stored under: the X-GitHub-Event header value, followed by "." and the
// body's top-level action when it has one (e.g. "issues.opened"). Backfill
// from a GitHub App's delivery log uses it on the recorded request, so a
// recovered delivery gets the type its webhook would have. Errors are
// *RejectError (400).
func GitHubEventType(event string, body []byte) (string, error) { return github.EventType(event, body) }
