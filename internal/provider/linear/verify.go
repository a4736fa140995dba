// Package linear is the provider kind linear: Linear's data-change webhooks,
// signed with the webhook's signing secret.
package linear

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Linear deliveries:
//
//	Linear-Signature: <hex HMAC-SHA256(secret, raw body)>
//
// Linear signs no header timestamp: the body's top-level webhookTimestamp
// (unix milliseconds), covered by the signature, must be within 5 minutes of
// now, either way. It is read once the signature matched; a body that is not
// a JSON object has none and is refused by Identify.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the linear verifier accepting deliveries signed with any
// of secrets. runner/verify.New has checked them: at least one, none empty,
// none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "linear".
func (p *verifier) Kind() string { return "linear" }

// Verify checks Linear-Signature over the body, then the body's webhookTimestamp.
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	mac, err := parseLinearSignature(h.Get("Linear-Signature"))
	if err != nil {
		return err
	}
	if !p.keys.Match([][]byte{mac}, "", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	ms, ok, err := webhookTimestamp(body)
	if !ok || err != nil {
		return err
	}
	return sig.CheckToleranceMillis(ms, now)
}

// parseLinearSignature returns the MAC of a Linear-Signature header: 64 hex
// digits, spaces around them trimmed.
func parseLinearSignature(header string) ([]byte, error) {
	return sig.MACHeader(header, "", hex.DecodeString)
}

// webhookTimestamp returns the body's top-level webhookTimestamp: unix
// milliseconds written as 1 to 18 decimal digits (a JSON integer, no sign,
// fraction or exponent). ok is false when the body is not a JSON object
// Postgres jsonb accepts: it has no timestamp to read, and Identify refuses
// it (400 body not json), so it can never be stored. Nesting depth does not
// matter here (Identify refuses a body nested too deep), as
// webhooks._verify_linear reads it.
func webhookTimestamp(body []byte) (ms int64, ok bool, err error) {
	env, err := sig.ReadEnvelope(body)
	var rej *sig.RejectError
	if errors.As(err, &rej) && rej.Reason == sig.ReasonBodyTooDeep {
		env = sig.Envelope{}
		err = json.Unmarshal(body, &env) // valid JSON jsonb accepts, only deep
	}
	if err != nil {
		return 0, false, nil
	}
	if !env.Has("webhookTimestamp") {
		return 0, true, sig.Unauthorized(sig.ReasonTimestampMissing)
	}
	raw := string(env["webhookTimestamp"])
	if raw == "" || raw[0] < '0' || raw[0] > '9' {
		return 0, true, sig.Unauthorized(sig.ReasonTimestampMalformed)
	}
	ms, err = sig.ParseTimestamp(raw)
	return ms, true, err
}

// Identify takes the idempotency key from the Linear-Delivery header and the
// event type from the body: "<type>.<action>" (Issue.create). The header is
// outside the signature: KeySigned is false, so a signed body already stored
// under another delivery id is a duplicate.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return sig.Delivery{}, err
	}
	key, err := sig.HeaderKey(h, "Linear-Delivery")
	if err != nil {
		return sig.Delivery{}, err
	}
	typ, okType := env.Str("type")
	action, okAction := env.Str("action")
	t := ""
	if okType && okAction {
		t = typ + "." + action
	}
	if t, err = sig.EventType(t); err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body}, nil
}
