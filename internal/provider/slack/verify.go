// Package slack is the provider kind slack: Slack's Events API, whose
// deliveries are signed with the app's signing secret.
package slack

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies Slack Events API deliveries:
//
//	X-Slack-Request-Timestamp: <unix seconds>
//	X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, "v0:<timestamp>:<raw body>")>
//
// The timestamp must be within 5 minutes of now, either way.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the slack verifier accepting deliveries signed with any
// of secrets (the app's signing secrets). runner/verify.New has checked them:
// at least one, none empty, none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "slack".
func (p *verifier) Kind() string { return "slack" }

// Verify checks X-Slack-Signature over "v0:<X-Slack-Request-Timestamp>:<body>".
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	mac, err := parseSlackSignature(h.Get("X-Slack-Signature"))
	if err != nil {
		return err
	}
	rawTS := h.Get("X-Slack-Request-Timestamp")
	ts, err := sig.ParseTimestamp(rawTS)
	if err != nil {
		return err
	}
	// The timestamp first: a stale delivery costs no MAC.
	if err := sig.CheckTolerance(ts, now); err != nil {
		return err
	}
	if !p.keys.Match([][]byte{mac}, "v0:"+rawTS+":", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parseSlackSignature returns the MAC of an X-Slack-Signature header,
// "v0=<64 hex digits>" with spaces around it trimmed.
func parseSlackSignature(header string) ([]byte, error) {
	return sig.MACHeader(header, "v0=", hex.DecodeString)
}

// Identify takes the idempotency key from the body's event_id and the event
// type from event.type of an event_callback, else from the top-level type.
// A url_verification (Slack checking the Request URL) is a handshake: it is
// answered {"challenge": <its challenge>} and stored nowhere. Retries
// (X-Slack-Retry-Num) carry the same event_id, so they are duplicates.
func (p *verifier) Identify(_ http.Header, body []byte) (sig.Delivery, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return sig.Delivery{}, err
	}
	top, _ := env.Str("type")
	if top == "url_verification" {
		challenge, ok := env.Str("challenge")
		if !ok {
			return sig.Delivery{}, sig.BadRequest(sig.ReasonKeyMissing)
		}
		answer, err := json.Marshal(map[string]string{"challenge": challenge})
		if err != nil {
			return sig.Delivery{}, sig.BadRequest(sig.ReasonKeyInvalid)
		}
		return sig.Delivery{Payload: body, Handshake: answer, KeySigned: true}, nil
	}
	if !env.Has("event_id") {
		return sig.Delivery{}, sig.BadRequest(sig.ReasonKeyMissing)
	}
	key, err := env.Key("event_id")
	if err != nil {
		return sig.Delivery{}, err
	}
	t := top
	if top == "event_callback" {
		t = innerType(env["event"])
	}
	if t, err = sig.EventType(t); err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: true}, nil
}

// innerType returns the type of an event_callback's event object: its
// top-level "type" when that is a non-empty string, else "".
func innerType(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var inner sig.Envelope
	if err := json.Unmarshal(raw, &inner); err != nil {
		return ""
	}
	t, _ := inner.Str("type")
	return t
}
