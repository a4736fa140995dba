// Package paddle is the provider kind paddle (Paddle Billing): its
// signature verifier and the client of its event list, read by backfill.
package paddle

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Paddle Billing deliveries:
//
//	Paddle-Signature: ts=<unix seconds>;h1=<hex>[;h1=<hex>]
//
// where each h1 is HMAC-SHA256(secret, "<ts>:<raw body>"); any matching h1
// is enough (Paddle sends one per active secret while a secret is rotated)
// and other schemes are ignored.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the paddle verifier accepting deliveries signed with
// any of secrets (Paddle's endpoint secret keys, pdl_ntfset_…).
// runner/verify.New has checked them: at least one, none empty, none shorter
// than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "paddle".
func (p *verifier) Kind() string { return "paddle" }

// Verify checks Paddle-Signature over "<ts>:<body>".
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	rawTS, sigs, err := parsePaddleSignature(h.Get("Paddle-Signature"))
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
	if !p.keys.Match(sigs, rawTS+":", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parsePaddleSignature returns the raw ts value and the well-formed h1
// signatures of a Paddle-Signature header (items separated by ";", spaces
// around an item ignored). A header with two different ts values is
// refused: which one was signed would be a guess.
func parsePaddleSignature(header string) (ts string, sigs [][]byte, err error) {
	if len(header) > sig.MaxSignatureHeaderBytes {
		return "", nil, sig.Unauthorized(sig.ReasonSignatureHeaderTooLarge)
	}
	entries := 0 // everything but ts= and empty items counts as a signature
	for item := range strings.SplitSeq(header, ";") {
		if item = strings.TrimFunc(item, unicode.IsSpace); item != "" && !strings.HasPrefix(item, "ts=") {
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
	for item := range strings.SplitSeq(header, ";") {
		name, value, ok := strings.Cut(strings.TrimFunc(item, unicode.IsSpace), "=")
		if !ok {
			continue
		}
		switch name {
		case "ts":
			if tsSeen && value != ts {
				return "", nil, sig.Unauthorized(sig.ReasonTimestampMalformed)
			}
			ts, tsSeen = value, true
		case "h1":
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

// Identify takes the idempotency key from the top-level event_id and the
// event type from the top-level event_type.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	return sig.IdentifyBody(body, "event_id", "event_type")
}
