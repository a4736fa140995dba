package github

import (
	"encoding/hex"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies GitHub deliveries:
//
//	X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>
//
// GitHub signs no timestamp, so a captured delivery can be replayed; the
// idempotency key (X-GitHub-Delivery) makes a replay a duplicate.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the github verifier accepting deliveries signed with any
// of secrets. runner/verify.New has checked them: at least one, none
// empty, none shorter than sig.MinSecretBytes.
func NewVerifier(secrets []string) (sig.Provider, error) {
	return &verifier{keys: sig.RawKeys(secrets)}, nil
}

// Kind returns "github".
func (p *verifier) Kind() string { return "github" }

// Verify checks X-Hub-Signature-256 over the body. now is unused.
func (p *verifier) Verify(h http.Header, body []byte, _ time.Time) error {
	mac, err := parseGitHubSignature(h.Get("X-Hub-Signature-256"))
	if err != nil {
		return err
	}
	if !p.keys.Match([][]byte{mac}, "", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// parseGitHubSignature returns the signature of an X-Hub-Signature-256 header.
func parseGitHubSignature(header string) ([]byte, error) {
	return sig.MACHeader(header, "sha256=", hex.DecodeString)
}

// Identify takes the idempotency key from X-GitHub-Delivery and the event type
// from X-GitHub-Event, followed by "." and the top-level action when the body
// has one (e.g. "issues.opened").
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return sig.Delivery{}, err
	}
	key, err := sig.HeaderKey(h, "X-GitHub-Delivery")
	if err != nil {
		return sig.Delivery{}, err
	}
	t, err := gitHubEventType(h.Get("X-GitHub-Event"), env)
	if err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body}, nil
}

// EventType returns the event type a GitHub webhook delivery is
// stored under: the X-GitHub-Event header value, followed by "." and the
// body's top-level action when it has one (e.g. "issues.opened"). Backfill
// from a GitHub App's delivery log uses it on the recorded request, so a
// recovered delivery gets the type its webhook would have. Errors are
// *RejectError (400).
func EventType(event string, body []byte) (string, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return "", err
	}
	return gitHubEventType(event, env)
}

func gitHubEventType(event string, env sig.Envelope) (string, error) {
	t := event
	if action, ok := env.Str("action"); ok && t != "" {
		t += "." + action
	}
	return sig.EventType(t)
}
