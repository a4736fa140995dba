package verify

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// shopify verifies Shopify deliveries:
//
//	X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256(secret, raw body)>
//
// Shopify signs no timestamp; the idempotency key (X-Shopify-Event-Id) makes a
// replay a duplicate.
type shopify struct{ keys macKeys }

var _ Provider = (*shopify)(nil)

func newShopify(secrets []string) (Provider, error) {
	return &shopify{keys: rawKeys(secrets)}, nil
}

// Kind returns "shopify".
func (p *shopify) Kind() string { return "shopify" }

// Verify checks X-Shopify-Hmac-Sha256 over the body. now is unused.
func (p *shopify) Verify(h http.Header, body []byte, _ time.Time) error {
	sig, err := parseShopifySignature(h.Get("X-Shopify-Hmac-Sha256"))
	if err != nil {
		return err
	}
	if !p.keys.match([][]byte{sig}, "", body) {
		return unauthorized(ReasonSignatureMismatch)
	}
	return nil
}

// parseShopifySignature returns the signature of an X-Shopify-Hmac-Sha256 header.
func parseShopifySignature(header string) ([]byte, error) {
	if len(header) > MaxSignatureHeaderBytes {
		return nil, unauthorized(ReasonSignatureHeaderTooLarge)
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, unauthorized(ReasonSignatureMissing)
	}
	sig, err := base64.StdEncoding.DecodeString(header)
	if err != nil || len(sig) != sha256.Size {
		return nil, unauthorized(ReasonSignatureMalformed)
	}
	return sig, nil
}

// Identify takes the idempotency key from X-Shopify-Event-Id and the event
// type from X-Shopify-Topic.
func (p *shopify) Identify(h http.Header, body []byte) (Delivery, error) {
	if _, err := ReadEnvelope(body); err != nil {
		return Delivery{}, err
	}
	key, err := headerKey(h, "X-Shopify-Event-Id")
	if err != nil {
		return Delivery{}, err
	}
	t, err := eventType(h.Get("X-Shopify-Topic"))
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{ExternalID: key, EventType: t, Payload: body}, nil
}
