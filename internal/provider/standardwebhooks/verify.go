package standardwebhooks

import (
	"crypto/ed25519"
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
// the base64-decoded secret after its optional "whsec_" prefix. The
// asymmetric version is accepted too: each "v1a,<base64>" entry is an
// Ed25519 signature of the same "<id>.<timestamp>.<raw body>", verified with
// the public keys configured as "whpk_<base64 of 32 bytes>". A provider may
// list whsec_ secrets and whpk_ keys together; a delivery is valid if any
// v1 entry matches any secret or any v1a entry verifies with any public key.
// Entries of other versions are ignored.
type verifier struct {
	keys sig.Keys
	pubs []ed25519.PublicKey
}

var _ sig.Provider = (*verifier)(nil)

// NewVerifier returns the standardwebhooks verifier accepting deliveries
// signed with any of secrets: whsec_ secrets (or unprefixed base64) for v1,
// whpk_ public keys for v1a. runner/verify.New has checked them: at least
// one, none empty; the length of each decoded key is checked here.
func NewVerifier(secrets []string) (sig.Provider, error) {
	v := &verifier{}
	for i, s := range secrets {
		if strings.HasPrefix(s, "whpk_") {
			pub, err := decodeWhpk(s)
			if err != nil {
				return nil, fmt.Errorf("provider kind standardwebhooks: secret %d of %d: %w", i+1, len(secrets), err)
			}
			v.pubs = append(v.pubs, pub)
			continue
		}
		if strings.HasPrefix(s, "whsk_") {
			return nil, fmt.Errorf("provider kind standardwebhooks: secret %d of %d: a whsk_ signing key is the sender's private key; configure its public key (whpk_)", i+1, len(secrets))
		}
		key, err := decodeWhsec(s)
		if err != nil {
			return nil, fmt.Errorf("provider kind standardwebhooks: secret %d of %d: %w", i+1, len(secrets), err)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// decodeWhpk decodes a Standard Webhooks public key: "whpk_" and the base64
// (padded or not) of a 32-byte Ed25519 public key. Its errors never
// contain the key.
func decodeWhpk(secret string) (ed25519.PublicKey, error) {
	s := strings.TrimPrefix(secret, "whpk_")
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, errors.New(`not base64 after the "whpk_" prefix`)
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("the decoded public key is %d bytes, not the %d of an Ed25519 key", len(key), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(key), nil
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
// for its missing idempotency key. What a forged delivery costs is bounded:
// the header's bounds (sig.CheckBounds, at most sig.MaxAsymmetricSignatures
// v1a entries) and the timestamp are checked before any signature, then one
// MAC per whsec_ secret when there are v1 entries, and at most
// sig.MaxAsymmetricSignatures Ed25519 verifications per whpk_ key.
func (p *verifier) Verify(h http.Header, body []byte, now time.Time) error {
	sigs, asym, err := parseStandardSignatures(h.Get("webhook-signature"))
	if err != nil {
		return err
	}
	rawTS := h.Get("webhook-timestamp")
	ts, err := sig.ParseTimestamp(rawTS)
	if err != nil {
		return err
	}
	// The timestamp first: a stale delivery costs no MAC and no Ed25519
	// verification.
	if err := sig.CheckTolerance(ts, now); err != nil {
		return err
	}
	prefix := h.Get("webhook-id") + "." + rawTS + "."
	if !p.keys.Match(sigs, prefix, body) && !p.matchAsymmetric(asym, prefix, body) {
		return sig.Unauthorized(sig.ReasonSignatureMismatch)
	}
	return nil
}

// matchAsymmetric reports whether any of the v1a signatures verifies
// prefix followed by body with any of the public keys.
func (p *verifier) matchAsymmetric(asym [][]byte, prefix string, body []byte) bool {
	if len(asym) == 0 || len(p.pubs) == 0 {
		return false
	}
	msg := make([]byte, 0, len(prefix)+len(body))
	msg = append(append(msg, prefix...), body...)
	for _, pub := range p.pubs {
		for _, s := range asym {
			if ed25519.Verify(pub, msg, s) {
				return true
			}
		}
	}
	return false
}

// parseStandardSignatures returns the well-formed v1 signatures (32-byte
// MACs) and v1a signatures (64-byte Ed25519 signatures), in padded base64,
// of a space-separated webhook-signature list. Beyond sig.CheckBounds, a
// list with more than sig.MaxAsymmetricSignatures entries labelled v1a,
// well-formed or not, is refused.
func parseStandardSignatures(header string) (sigs, asym [][]byte, err error) {
	if len(header) > sig.MaxSignatureHeaderBytes {
		return nil, nil, sig.Unauthorized(sig.ReasonSignatureHeaderTooLarge)
	}
	entries := strings.Fields(header)
	if err := sig.CheckBounds(header, len(entries)); err != nil {
		return nil, nil, err
	}
	v1a := 0
	for _, e := range entries {
		if strings.HasPrefix(e, "v1a,") {
			v1a++
		}
	}
	if v1a > sig.MaxAsymmetricSignatures {
		return nil, nil, sig.Unauthorized(sig.ReasonTooManyAsymmetricSignatures)
	}
	if len(entries) == 0 {
		return nil, nil, sig.Unauthorized(sig.ReasonSignatureMissing)
	}
	for _, e := range entries {
		version, v, ok := strings.Cut(e, ",")
		if !ok {
			continue
		}
		switch version {
		case "v1":
			if mac, err := base64.StdEncoding.DecodeString(v); err == nil && len(mac) == sha256.Size {
				sigs = append(sigs, mac)
			}
		case "v1a":
			if s, err := base64.StdEncoding.DecodeString(v); err == nil && len(s) == ed25519.SignatureSize {
				asym = append(asym, s)
			}
		}
	}
	if len(sigs) == 0 && len(asym) == 0 {
		return nil, nil, sig.Unauthorized(sig.ReasonSignatureMalformed)
	}
	return sigs, asym, nil
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
