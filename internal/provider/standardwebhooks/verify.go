package standardwebhooks

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// verifier verifies deliveries signed by the Standard Webhooks
// specification (https://www.standardwebhooks.com, used by Svix and others):
//
//	webhook-id: <message id>
//	webhook-timestamp: <unix seconds>
//	webhook-signature: v1,<base64> [v1,<base64> ...]
//
// where each v1 is HMAC-SHA256(key, "<id>.<timestamp>.<raw body>") and key is
// the base64-decoded secret after its optional "whsec_" prefix. Entries of
// other versions (e.g. "v1a,") are ignored.
type verifier struct{ keys sig.Keys }

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the standardwebhooks verifier accepting deliveries
// signed with any of secrets. runner/verify.New has checked them: at least
// one, none empty; the length of each decoded key is checked here.
func NewVerifier(secrets []string) (sig.Provider, error) {
	keys := make(sig.Keys, len(secrets))
	for i, s := range secrets {
		key, err := decodeWhsec(s)
		if err != nil {
			return nil, fmt.Errorf("provider kind standardwebhooks: secret %d of %d: %w", i+1, len(secrets), err)
		}
		keys[i] = key
	}
	return &verifier{keys: keys}, nil
}

// decodeWhsec decodes a Standard Webhooks secret: base64, padded or not,
// after an optional "whsec_" prefix. Its errors never contain the secret.
func decodeWhsec(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, errors.New(`not base64 after the optional "whsec_" prefix`)
	}
	if len(key) == 0 {
		return nil, errors.New(`empty after the "whsec_" prefix`)
	}
	if len(key) < sig.MinSecretBytes {
		return nil, fmt.Errorf("the decoded key is %d bytes, shorter than the %d required", len(key), sig.MinSecretBytes)
	}
	return key, nil
}

// Kind returns "standardwebhooks".
func (p *verifier) Kind() string { return "standardwebhooks" }

// Verify checks webhook-signature over "<webhook-id>.<webhook-timestamp>.<body>".
// A missing webhook-id is signed as empty; Identify then refuses the delivery
// for its missing idempotency key.
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	sigs, err := parseStandardSignatures(h.Get("webhook-signature"))
	if err != nil {
		return err
	}
	rawTS := h.Get("webhook-timestamp")
	ts, err := sig.ParseTimestamp(rawTS)
	if err != nil {
		return err
	}
	if !p.keys.Match(sigs, h.Get("webhook-id")+"."+rawTS+".", body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return sig.CheckTolerance(ts, now)
}

// parseStandardSignatures returns the well-formed v1 signatures of a
// space-separated webhook-signature list.
func parseStandardSignatures(header string) ([][]byte, error) {
	if len(header) > sig.MaxSignatureHeaderBytes {
		return nil, sig.Unauthorized(sig.ReasonSignatureHeaderTooLarge)
	}
	entries := strings.Fields(header)
	if err := sig.CheckBounds(header, len(entries)); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, sig.Unauthorized(sig.ReasonSignatureMissing)
	}
	var sigs [][]byte
	for _, e := range entries {
		version, v, ok := strings.Cut(e, ",")
		if !ok || version != "v1" {
			continue // another version, e.g. the asymmetric v1a
		}
		if mac, err := base64.StdEncoding.DecodeString(v); err == nil && len(mac) == sha256.Size {
			sigs = append(sigs, mac)
		}
	}
	if len(sigs) == 0 {
		return nil, sig.Unauthorized(sig.ReasonSignatureMalformed)
	}
	return sigs, nil
}

// Identify takes the idempotency key from webhook-id and the event type from
// the top-level type.
func (p *verifier) Identify(h http.Header, body []byte) (sig.Delivery, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return sig.Delivery{}, err
	}
	key, err := sig.HeaderKey(h, "webhook-id")
	if err != nil {
		return sig.Delivery{}, err
	}
	t, _ := env.Str("type")
	if t, err = sig.EventType(t); err != nil {
		return sig.Delivery{}, err
	}
	return sig.Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: true}, nil
}
