package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// stripe verifies Stripe deliveries:
//
//	Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>][,v0=<hex>]
//
// where each v1 is HMAC-SHA256(secret, "<t>.<raw body>"); any matching v1 is
// enough and other schemes (v0) are ignored.
type stripe struct{ keys macKeys }

var _ Provider = (*stripe)(nil)

func newStripe(secrets []string) (Provider, error) {
	return &stripe{keys: rawKeys(secrets)}, nil
}

// Kind returns "stripe".
func (p *stripe) Kind() string { return "stripe" }

// Verify checks Stripe-Signature over "<t>.<body>".
func (p *stripe) Verify(h http.Header, body []byte, now time.Time) error {
	rawTS, sigs, err := parseStripeSignature(h.Get("Stripe-Signature"))
	if err != nil {
		return err
	}
	ts, err := parseTimestamp(rawTS)
	if err != nil {
		return err
	}
	if !p.keys.match(sigs, rawTS+".", body) {
		return unauthorized(ReasonSignatureMismatch)
	}
	return checkTolerance(ts, now)
}

// parseStripeSignature returns the raw t value and the well-formed v1
// signatures of a Stripe-Signature header. A header with two different t
// values is refused: which one was signed would be a guess.
func parseStripeSignature(header string) (ts string, sigs [][]byte, err error) {
	if len(header) > MaxSignatureHeaderBytes {
		return "", nil, unauthorized(ReasonSignatureHeaderTooLarge)
	}
	entries := 0 // everything but t= and empty items counts as a signature
	for item := range strings.SplitSeq(header, ",") {
		if item = strings.TrimFunc(item, unicode.IsSpace); item != "" && !strings.HasPrefix(item, "t=") {
			entries++
		}
	}
	if err := checkBounds(header, entries); err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(header) == "" {
		return "", nil, unauthorized(ReasonSignatureMissing)
	}
	tsSeen := false
	for item := range strings.SplitSeq(header, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		switch name {
		case "t":
			if tsSeen && value != ts {
				return "", nil, unauthorized(ReasonTimestampMalformed)
			}
			ts, tsSeen = value, true
		case "v1":
			if sig, err := hex.DecodeString(value); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	if len(sigs) == 0 {
		return "", nil, unauthorized(ReasonSignatureMalformed)
	}
	if !tsSeen {
		return "", nil, unauthorized(ReasonTimestampMissing)
	}
	if ts == "" {
		return "", nil, unauthorized(ReasonTimestampMalformed)
	}
	return ts, sigs, nil
}

// Identify takes the idempotency key from the top-level id and the event type
// from the top-level type.
func (p *stripe) Identify(h http.Header, body []byte) (Delivery, error) {
	env, err := ReadEnvelope(body)
	if err != nil {
		return Delivery{}, err
	}
	if !env.Has("id") {
		return Delivery{}, badRequest(ReasonKeyMissing)
	}
	key, err := env.Key("id")
	if err != nil {
		return Delivery{}, err
	}
	t, _ := env.Str("type")
	if t, err = eventType(t); err != nil {
		return Delivery{}, err
	}
	return Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: true}, nil
}
