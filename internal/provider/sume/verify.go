package sume

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Sume deliveries:
//
//	X-Sume-Timestamp: <unix seconds>
//	X-Sume-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
//
// The signature header may list several entries separated by commas or spaces;
// any matching v1 entry is enough and entries of other schemes are ignored.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the sume verifier accepting deliveries signed with any
// of secrets. runner/verify.New has checked them: at least one, none
// empty, none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "sume".
func (p *verifier) Kind() string { return "sume" }

// Verify checks X-Sume-Signature over "<X-Sume-Timestamp>.<body>".
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	sigs, err := parseSumeSignature(h.Get("X-Sume-Signature"))
	if err != nil {
		return err
	}
	rawTS := h.Get("X-Sume-Timestamp")
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

// parseSumeSignature returns the well-formed v1 signatures of an
// X-Sume-Signature header.
func parseSumeSignature(header string) ([][]byte, error) {
	if len(header) > sig.MaxSignatureHeaderBytes {
		return nil, sig.Unauthorized(sig.ReasonSignatureHeaderTooLarge)
	}
	entries := strings.FieldsFunc(header, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if err := sig.CheckBounds(header, len(entries)); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, sig.Unauthorized(sig.ReasonSignatureMissing)
	}
	var sigs [][]byte
	for _, e := range entries {
		v, ok := strings.CutPrefix(e, "v1=")
		if !ok {
			continue // another scheme
		}
		if mac, err := hex.DecodeString(v); err == nil && len(mac) == sha256.Size {
			sigs = append(sigs, mac)
		}
	}
	if len(sigs) == 0 {
		return nil, sig.Unauthorized(sig.ReasonSignatureMalformed)
	}
	return sigs, nil
}

// Identify takes the idempotency key from the first of these that is present
// and not null: the top-level job_id (job webhooks), the top-level request_id
// (Format-run webhooks; a nested payload.request_id is never looked at), the
// top-level id (resource events), else the unsigned X-Sume-Event-Id header.
// When the body has a top-level id and the header is sent, they must be equal.
// The event type is the top-level event, else the top-level type.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return sig.Delivery{}, err
	}
	headerID := h.Get("X-Sume-Event-Id")
	var key string
	signed := true
	switch {
	case env.Has("job_id"):
		key, err = env.Key("job_id")
	case env.Has("request_id"):
		key, err = env.Key("request_id")
	case env.Has("id"):
		key, err = env.Key("id")
	case headerID != "":
		key, err = sig.ValidKey(headerID)
		signed = false
	default:
		err = sig.BadRequest(sig.ReasonKeyMissing)
	}
	if err != nil {
		return sig.Delivery{}, err
	}
	// The header is not signed: it may only repeat the signed body id.
	if headerID != "" && env.Has("id") {
		if id, err := env.Key("id"); err != nil || id != headerID {
			return sig.Delivery{}, sig.BadRequest(sig.ReasonEventIDMismatch)
		}
	}
	t, ok := env.Str("event")
	if !ok {
		t, _ = env.Str("type")
	}
	if t, err = sig.EventType(t); err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: signed}, nil
}
