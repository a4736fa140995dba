package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// sume verifies Sume deliveries:
//
//	X-Sume-Timestamp: <unix seconds>
//	X-Sume-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
//
// The signature header may list several entries separated by commas or spaces;
// any matching v1 entry is enough and entries of other schemes are ignored.
type sume struct{ keys macKeys }

var _ Provider = (*sume)(nil)

func newSume(secrets []string) (Provider, error) {
	return &sume{keys: rawKeys(secrets)}, nil
}

// Kind returns "sume".
func (p *sume) Kind() string { return "sume" }

// Verify checks X-Sume-Signature over "<X-Sume-Timestamp>.<body>".
func (p *sume) Verify(h http.Header, body []byte, now time.Time) error {
	sigs, err := parseSumeSignature(h.Get("X-Sume-Signature"))
	if err != nil {
		return err
	}
	rawTS := h.Get("X-Sume-Timestamp")
	ts, err := parseTimestamp(rawTS)
	if err != nil {
		return err
	}
	if !p.keys.match(sigs, rawTS+".", body) {
		return unauthorized(ReasonSignatureMismatch)
	}
	return checkTolerance(ts, now)
}

// parseSumeSignature returns the well-formed v1 signatures of an
// X-Sume-Signature header.
func parseSumeSignature(header string) ([][]byte, error) {
	if len(header) > MaxSignatureHeaderBytes {
		return nil, unauthorized(ReasonSignatureHeaderTooLarge)
	}
	entries := strings.FieldsFunc(header, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if err := checkBounds(header, len(entries)); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, unauthorized(ReasonSignatureMissing)
	}
	var sigs [][]byte
	for _, e := range entries {
		v, ok := strings.CutPrefix(e, "v1=")
		if !ok {
			continue // another scheme
		}
		if sig, err := hex.DecodeString(v); err == nil && len(sig) == sha256.Size {
			sigs = append(sigs, sig)
		}
	}
	if len(sigs) == 0 {
		return nil, unauthorized(ReasonSignatureMalformed)
	}
	return sigs, nil
}

// Identify takes the idempotency key from the first of these that is present
// and not null: the top-level job_id (job webhooks), the top-level request_id
// (Format-run webhooks; a nested payload.request_id is never looked at), the
// top-level id (resource events), else the unsigned X-Sume-Event-Id header.
// When the body has a top-level id and the header is sent, they must be equal.
// The event type is the top-level event, else the top-level type.
func (p *sume) Identify(h http.Header, body []byte) (Delivery, error) {
	env, err := ReadEnvelope(body)
	if err != nil {
		return Delivery{}, err
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
		key, err = validKey(headerID)
		signed = false
	default:
		err = badRequest(ReasonKeyMissing)
	}
	if err != nil {
		return Delivery{}, err
	}
	// The header is not signed: it may only repeat the signed body id.
	if headerID != "" && env.Has("id") {
		if id, err := env.Key("id"); err != nil || id != headerID {
			return Delivery{}, badRequest(ReasonEventIDMismatch)
		}
	}
	t, ok := env.Str("event")
	if !ok {
		t, _ = env.Str("type")
	}
	if t, err = eventType(t); err != nil {
		return Delivery{}, err
	}
	return Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: signed}, nil
}
