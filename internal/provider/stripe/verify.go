package stripe

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Stripe deliveries:
//
//	Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>][,v0=<hex>]
//
// where each v1 is HMAC-SHA256(secret, "<t>.<raw body>"); any matching v1 is
// enough and other schemes (v0) are ignored.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the stripe verifier accepting deliveries signed with any
// of secrets. runner/verify.New has checked them: at least one, none
// empty, none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "stripe".
func (p *verifier) Kind() string { return "stripe" }

// Verify checks Stripe-Signature over "<t>.<body>".
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	rawTS, sigs, err := parseStripeSignature(h.Get("Stripe-Signature"))
	if err != nil {
		return err
	}
	ts, err := sig.ParseTimestamp(rawTS)
	if err != nil {
		return err
	}
	// The timestamp first: a stale delivery costs no MAC.
	if err := sig.CheckTolerance(ts, now); err != nil {
		return err
	}
	if !p.keys.Match(sigs, rawTS+".", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parseStripeSignature returns the raw t value and the well-formed v1
// signatures of a Stripe-Signature header. A header with two different t
// values is refused: which one was signed would be a guess.
func parseStripeSignature(header string) (ts string, sigs [][]byte, err error) {
	if len(header) > sig.MaxSignatureHeaderBytes {
		return "", nil, sig.Unauthorized(sig.ReasonSignatureHeaderTooLarge)
	}
	entries := 0 // everything but t= and empty items counts as a signature
	for item := range strings.SplitSeq(header, ",") {
		if item = strings.TrimFunc(item, unicode.IsSpace); item != "" && !strings.HasPrefix(item, "t=") {
			entries++
		}
	}
	if err := sig.CheckBounds(header, entries); err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(header) == "" {
		return "", nil, sig.Unauthorized(sig.ReasonSignatureMissing)
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
				return "", nil, sig.Unauthorized(sig.ReasonTimestampMalformed)
			}
			ts, tsSeen = value, true
		case "v1":
			if mac, err := hex.DecodeString(value); err == nil && len(mac) == sha256.Size {
				sigs = append(sigs, mac)
			}
		}
	}
	if len(sigs) == 0 {
		return "", nil, sig.Unauthorized(sig.ReasonSignatureMalformed)
	}
	if !tsSeen {
		return "", nil, sig.Unauthorized(sig.ReasonTimestampMissing)
	}
	if ts == "" {
		return "", nil, sig.Unauthorized(sig.ReasonTimestampMalformed)
	}
	return ts, sigs, nil
}

// Identify takes the idempotency key from the top-level id and the event type
// from the top-level type.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	return sig.IdentifyBody(body, "id", "type")
}
