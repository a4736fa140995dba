package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// github verifies GitHub deliveries:
//
//	X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>
//
// GitHub signs no timestamp, so a captured delivery can be replayed; the
// idempotency key (X-GitHub-Delivery) makes a replay a duplicate.
type github struct{ keys macKeys }

var _ Provider = (*github)(nil)

func newGitHub(secrets []string) (Provider, error) {
	return &github{keys: rawKeys(secrets)}, nil
}

// Kind returns "github".
func (p *github) Kind() string { return "github" }

// Verify checks X-Hub-Signature-256 over the body. now is unused.
func (p *github) Verify(h http.Header, body []byte, _ time.Time) error {
	sig, err := parseGitHubSignature(h.Get("X-Hub-Signature-256"))
	if err != nil {
		return err
	}
	if !p.keys.match([][]byte{sig}, "", body) {
		return unauthorized(ReasonSignatureMismatch)
	}
	return nil
}

// parseGitHubSignature returns the signature of an X-Hub-Signature-256 header.
func parseGitHubSignature(header string) ([]byte, error) {
	if len(header) > MaxSignatureHeaderBytes {
		return nil, unauthorized(ReasonSignatureHeaderTooLarge)
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, unauthorized(ReasonSignatureMissing)
	}
	v, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return nil, unauthorized(ReasonSignatureMalformed)
	}
	sig, err := hex.DecodeString(v)
	if err != nil || len(sig) != sha256.Size {
		return nil, unauthorized(ReasonSignatureMalformed)
	}
	return sig, nil
}

// Identify takes the idempotency key from X-GitHub-Delivery and the event type
// from X-GitHub-Event, followed by "." and the top-level action when the body
// has one (e.g. "issues.opened").
func (p *github) Identify(h http.Header, body []byte) (Delivery, error) {
	env, err := ReadEnvelope(body)
	if err != nil {
		return Delivery{}, err
	}
	key, err := headerKey(h, "X-GitHub-Delivery")
	if err != nil {
		return Delivery{}, err
	}
	t, err := gitHubEventType(h.Get("X-GitHub-Event"), env)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{ExternalID: key, EventType: t, Payload: body}, nil
}

// GitHubEventType returns the event type a GitHub webhook delivery is
// stored under: the X-GitHub-Event header value, followed by "." and the
// body's top-level action when it has one (e.g. "issues.opened"). Backfill
// from a GitHub App's delivery log uses it on the recorded request, so a
// recovered delivery gets the type its webhook would have. Errors are
// *RejectError (400).
func GitHubEventType(event string, body []byte) (string, error) {
	env, err := ReadEnvelope(body)
	if err != nil {
		return "", err
	}
	return gitHubEventType(event, env)
}

func gitHubEventType(event string, env Envelope) (string, error) {
	t := event
	if action, ok := env.Str("action"); ok && t != "" {
		t += "." + action
	}
	return eventType(t)
}
