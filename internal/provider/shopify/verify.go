package shopify

import (
	"encoding/base64"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Shopify deliveries:
//
//	X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256(secret, raw body)>
//
// Shopify signs no timestamp; the idempotency key (X-Shopify-Event-Id) makes a
// replay a duplicate.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the shopify verifier accepting deliveries signed with any
// of secrets. runner/verify.New has checked them: at least one, none
// empty, none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "shopify".
func (p *verifier) Kind() string { return "shopify" }

// Verify checks X-Shopify-Hmac-Sha256 over the body. now is unused.
func (p *verifier) Verify(h http.Header, body []byte, _ time.Time) error {
	mac, err := parseShopifySignature(h.Get("X-Shopify-Hmac-Sha256"))
	if err != nil {
		return err
	}
	if !p.keys.Match([][]byte{mac}, "", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parseShopifySignature returns the signature of an X-Shopify-Hmac-Sha256 header.
func parseShopifySignature(header string) ([]byte, error) {
	return sig.MACHeader(header, "", base64.StdEncoding.DecodeString)
}

// Identify takes the idempotency key from X-Shopify-Event-Id and the event
// type from X-Shopify-Topic.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	if _, err := sig.ReadEnvelope(body); err != nil {
		return sig.Delivery{}, err
	}
	key, err := sig.HeaderKey(h, "X-Shopify-Event-Id")
	if err != nil {
		return sig.Delivery{}, err
	}
	t, err := sig.EventType(h.Get("X-Shopify-Topic"))
	if err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body}, nil
}
