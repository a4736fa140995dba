// Package square is the provider kind square: Square's webhook
// subscriptions, signed with the subscription's signature key over the
// notification URL and the body.
package square

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Square deliveries:
//
//	X-Square-HmacSha256-Signature: <base64 HMAC-SHA256(signature key, <notification URL> + <raw body>)>
//
// where the notification URL is exactly the one registered at Square
// (PGINBOX_URL_<NAME>). Square signs no timestamp; the body's event_id makes
// a replay a duplicate. The older X-Square-Signature (HMAC-SHA1) is ignored.
type verifier struct {
	keys sig.Keys
	url  string
}

var _ sig.Provider = (*verifier)(nil)

// ErrNoURL is returned by [NewVerifier]: Square signs the notification URL,
// so a verifier needs it ([NewURLVerifier]).
var ErrNoURL = errors.New("Square signs the notification URL: the exact URL registered at Square is required (PGINBOX_URL_<NAME>)")

// NewVerifier refuses: a square verifier needs the notification URL, see
// [NewURLVerifier].
func NewVerifier(_ []string) (sig.Provider, error) { return nil, ErrNoURL }

// NewURLVerifier returns the square verifier of deliveries Square posts to
// notificationURL, signed with any of secrets (the subscription's signature
// keys). runner/verify has checked the secrets: at least one, none empty,
// none shorter than sig.MinSecretBytes. The URL must be an absolute http or
// https URL; it is signed byte for byte as given.
func NewURLVerifier(notificationURL string, secrets []string) (sig.Provider, error) {
	if err := CheckURL(notificationURL); err != nil {
		return nil, err
	}
	return &verifier{keys: sig.RawKeys(secrets), url: notificationURL}, nil
}

// urlPattern is what a notification URL may be: absolute http or https with
// a host, no fragment, no space or control character (webhooks.set_provider
// applies the same rule), at most maxURLBytes long.
var urlPattern = regexp.MustCompile(`^https?://[^/?#\x00-\x20\x7f]+[^#\x00-\x20\x7f]*$`)

const maxURLBytes = 2048

// CheckURL reports whether u can be a notification URL (see urlPattern).
func CheckURL(u string) error {
	if u == "" {
		return ErrNoURL
	}
	if len(u) > maxURLBytes || !urlPattern.MatchString(u) {
		return fmt.Errorf("notification URL %q is not an absolute http(s) URL without a fragment", u)
	}
	return nil
}

// Kind returns "square".
func (p *verifier) Kind() string { return "square" }

// Verify checks X-Square-HmacSha256-Signature over the notification URL and
// the body. now is unused.
func (p *verifier) Verify(h http.Header, body []byte, _ time.Time) error {
	mac, err := parseSquareSignature(h.Get("X-Square-HmacSha256-Signature"))
	if err != nil {
		return err
	}
	if !p.keys.Match([][]byte{mac}, p.url, body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parseSquareSignature returns the MAC of an X-Square-HmacSha256-Signature
// header: padded standard base64 of 32 bytes, spaces around it trimmed.
func parseSquareSignature(header string) ([]byte, error) {
	return sig.MACHeader(header, "", base64.StdEncoding.DecodeString)
}

// Identify takes the idempotency key from the body's event_id and the event
// type from its type (payment.updated).
func (p *verifier) Identify(_ http.Header, body []byte) (sig.Delivery, error) {
	return sig.IdentifyBody(body, "event_id", "type")
}
