package standardwebhooks

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/sig"
)

// TestStandardWebhooksRefusesBeforeVerifying: what a forged delivery costs
// is bounded before any Ed25519 verification. A timestamp more than 5
// minutes from now is refused whatever the v1a entries, and a header with
// more than sig.MaxAsymmetricSignatures v1a entries is refused even when
// fresh. The verifier's public key is one byte long, so crypto/ed25519.Verify
// panics if it is ever called: a refusal that does not panic verified
// nothing. The last case shows the key does catch a verification.
func TestStandardWebhooksRefusesBeforeVerifying(t *testing.T) {
	t.Parallel()
	p := &verifier{pubs: []ed25519.PublicKey{{0}}}
	now := time.Unix(1_700_000_000, 0)
	const id = "msg_cost"
	body := []byte(`{"type":"invoice.paid"}`)
	// foreign returns n well-formed v1a entries over the delivery, each by a
	// key nobody configured.
	foreign := func(n int, at time.Time) string {
		entries := make([]string, n)
		for i := range entries {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			msg := id + "." + strconv.FormatInt(at.Unix(), 10) + "." + string(body)
			entries[i] = "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(msg)))
		}
		return strings.Join(entries, " ")
	}
	zeroV1 := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name      string
		at        time.Time
		signature string
		reason    string
	}{
		{"stale, two v1a", now.Add(-6 * time.Minute), foreign(2, now.Add(-6*time.Minute)), sig.ReasonTimestampOutOfTolerance},
		{"an hour old, two v1a", now.Add(-time.Hour), foreign(2, now.Add(-time.Hour)), sig.ReasonTimestampOutOfTolerance},
		{"future, two v1a", now.Add(6 * time.Minute), foreign(2, now.Add(6*time.Minute)), sig.ReasonTimestampOutOfTolerance},
		{"stale, two v1a and six v1", now.Add(-6 * time.Minute), strings.Repeat(zeroV1+" ", 6) + foreign(2, now.Add(-6*time.Minute)), sig.ReasonTimestampOutOfTolerance},
		{"fresh, three v1a", now, foreign(3, now), sig.ReasonTooManyAsymmetricSignatures},
		{"stale, three v1a", now.Add(-6 * time.Minute), foreign(3, now.Add(-6*time.Minute)), sig.ReasonTooManyAsymmetricSignatures},
		{"fresh, eight v1a", now, foreign(8, now), sig.ReasonTooManyAsymmetricSignatures},
		{"fresh, three malformed v1a and a v1", now, "v1a,x v1a,y v1a,z " + zeroV1, sig.ReasonTooManyAsymmetricSignatures},
		{"fresh, nine v1a", now, foreign(9, now), sig.ReasonTooManySignatures},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			h.Set("webhook-id", id)
			h.Set("webhook-timestamp", strconv.FormatInt(tt.at.Unix(), 10))
			h.Set("webhook-signature", tt.signature)
			panicked, err := verifyRecover(p, h, body, now)
			if panicked {
				t.Fatalf("Verify verified an Ed25519 signature before refusing the delivery")
			}
			var rej *sig.RejectError
			if !errors.As(err, &rej) || rej.Status != http.StatusUnauthorized || rej.Reason != tt.reason {
				t.Fatalf("Verify = %v, want 401 %q", err, tt.reason)
			}
		})
	}

	t.Run("fresh, two v1a: verified", func(t *testing.T) {
		t.Parallel()
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", foreign(2, now))
		if panicked, err := verifyRecover(p, h, body, now); !panicked {
			t.Fatalf("Verify = %v without verifying: the one-byte key catches nothing", err)
		}
	})
}

// verifyRecover calls p.Verify and reports whether it panicked.
func verifyRecover(p *verifier, h http.Header, body []byte, now time.Time) (panicked bool, err error) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return false, p.Verify(h, body, now)
}
