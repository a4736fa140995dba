package verify_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestKinds(t *testing.T) {
	t.Parallel()
	want := []string{"github", "linear", "paddle", "shopify", "slack", "square", "standardwebhooks", "stripe", "sume"}
	if got := verify.Kinds(); !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %q, want %q", got, want)
	}
	for _, kind := range want {
		secret := "identify-only-secret-0123"
		if kind == "standardwebhooks" {
			secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		}
		if got := mustProvider(t, kind, secret).Kind(); got != kind {
			t.Errorf("New(%q).Kind() = %q", kind, got)
		}
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    string
		secrets []string
		wantErr string // substring of the error
	}{
		{"unknown kind", "paypal", []string{"s"}, `unknown provider kind "paypal"`},
		{"kind is case-sensitive", "Sume", []string{"s"}, "unknown provider kind"},
		{"nil secrets", "sume", nil, "no secrets"},
		{"empty secrets", "stripe", []string{}, "no secrets"},
		{"empty secret", "github", []string{"ok-0123456789abcdef", ""}, "secret 2 of 2 is empty"},
		{"short secret", "sume", []string{"demo-secret"}, "secret 1 of 1 is 11 bytes, shorter than the 16 required"},
		{"short second secret", "shopify", []string{"shpss_0123456789abcdef", "shpss_short"}, "secret 2 of 2 is 11 bytes"},
		{"15 bytes", "stripe", []string{"whsec_123456789"}, "15 bytes, shorter than the 16 required"},
		{"whsec decoding to 15 bytes", "standardwebhooks", []string{"whsec_MTIzNDU2Nzg5MDEyMzQ1"}, "the decoded key is 15 bytes, shorter than the 16 required"},
		{"whsec decoding to 6 bytes", "standardwebhooks", []string{"whsec_c2VjcmV0"}, "the decoded key is 6 bytes"},
		{"whsec not base64", "standardwebhooks", []string{"whsec_not*base64!"}, "not base64"},
		{"bare not base64", "standardwebhooks", []string{"%%%%"}, "not base64"},
		{"whsec prefix only", "standardwebhooks", []string{"whsec_"}, "empty"},
		{"second whsec bad", "standardwebhooks", []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_???"}, "secret 2 of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := verify.New(tt.kind, tt.secrets)
			if err == nil {
				t.Fatalf("New(%q) = %v, want an error", tt.kind, p)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
			for _, s := range tt.secrets {
				if s = strings.TrimPrefix(s, "whsec_"); len(s) > 3 && strings.Contains(err.Error(), s) {
					t.Fatalf("error %q leaks a secret", err)
				}
			}
		})
	}
}

func TestNewAcceptsSecrets(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // spec example
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",       // no prefix
		"whsec_MTIzNDU2Nzg5MDEyMzQ1Ng==",         // 16 bytes, padded
		"whsec_MTIzNDU2Nzg5MDEyMzQ1Ng",           // 16 bytes, unpadded
		"whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4",         // 18 bytes, no padding needed
	} {
		if _, err := verify.New("standardwebhooks", []string{secret}); err != nil {
			t.Errorf("New(standardwebhooks, %q): %v", secret, err)
		}
	}
}

// TestReasonsAreLabels checks every reason is usable as a Prometheus label
// value and a stable response field: lower-case ASCII words.
func TestReasonsAreLabels(t *testing.T) {
	t.Parallel()
	for _, r := range []string{
		verify.ReasonSignatureMissing, verify.ReasonSignatureMalformed, verify.ReasonSignatureMismatch,
		verify.ReasonTimestampMissing, verify.ReasonTimestampMalformed, verify.ReasonTimestampOutOfTolerance,
		verify.ReasonBodyNotJSON, verify.ReasonKeyMissing, verify.ReasonKeyInvalid, verify.ReasonEventIDMismatch,
		verify.ReasonEventTypeMissing, verify.ReasonEventTypeInvalid,
	} {
		if r == "" || strings.Trim(r, "abcdefghijklmnopqrstuvwxyz ") != "" {
			t.Errorf("reason %q is not lower-case words", r)
		}
	}
}

// TestIdentifyBodyNotJSON checks every kind refuses a body that is not a JSON
// object, whatever its headers carry.
func TestIdentifyBodyNotJSON(t *testing.T) {
	t.Parallel()
	h := headers(
		"X-Sume-Event-Id", "evt_1", "X-GitHub-Delivery", "d1", "X-GitHub-Event", "push",
		"webhook-id", "msg_1", "X-Shopify-Event-Id", "e1", "X-Shopify-Topic", "orders/create",
	)
	for _, kind := range verify.Kinds() {
		p := mustProvider(t, kind, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		for _, body := range []string{"", " ", "null", "[]", `"x"`, "1", "{", `{"id":"a"} x`, `{"id":"a"}{}`, "{\"id\":\"\xff\"}", `{"id":"a\u0000"}`} {
			_, err := p.Identify(h, []byte(body))
			checkReject(t, err, http.StatusBadRequest, verify.ReasonBodyNotJSON)
		}
	}
}

// FuzzSignedRoundTrip signs arbitrary bodies and timestamps for Sume and
// Stripe: a fresh delivery signed with the secret verifies, one whose body
// changed does not; a stale one is refused for its timestamp, its body
// changed or not (the timestamp is checked before the MAC).
func FuzzSignedRoundTrip(f *testing.F) {
	f.Add("secret-0123456789", []byte(`{"job_id":"j"}`), int64(0))
	f.Add("s-0123456789abcdef", []byte(""), int64(299))
	f.Add("whsec_x0123456789ab", []byte("\x00\xff"), int64(-301))
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, secret string, body []byte, offset int64) {
		if len(secret) < verify.MinSecretBytes {
			return
		}
		offset %= 1000
		ts := strconv.FormatInt(now.Unix()+offset, 10)
		fresh := offset >= -300 && offset <= 300
		mac := macHex(secret, ts+"."+string(body))
		for kind, h := range map[string]http.Header{
			"sume":   headers("X-Sume-Timestamp", ts, "X-Sume-Signature", "v1="+mac),
			"stripe": headers("Stripe-Signature", "t="+ts+",v1="+mac),
		} {
			p := mustProvider(t, kind, "other-secret-0123456789", secret)
			err := p.Verify(h, body, now)
			if fresh && err != nil {
				t.Fatalf("%s: fresh signed delivery rejected: %v", kind, err)
			}
			if !fresh {
				checkReject(t, err, http.StatusUnauthorized, verify.ReasonTimestampOutOfTolerance)
			}
			tampered := append(bytes.Clone(body), ' ')
			want := verify.ReasonSignatureMismatch
			if !fresh {
				want = verify.ReasonTimestampOutOfTolerance
			}
			checkReject(t, p.Verify(h, tampered, now), http.StatusUnauthorized, want)
		}
	})
}

// TestKeySigned: which rule keyed a delivery decides whether the signature
// covers the key.
func TestKeySigned(t *testing.T) {
	t.Parallel()
	const secret = "key-signed-secret-0123"
	sw := "whsec_" + base64.StdEncoding.EncodeToString([]byte("key-signed-standard-key"))
	tests := []struct {
		kind, secret, body string
		h                  http.Header
		want               bool
	}{
		{"sume", secret, `{"job_id": "j", "event": "job.completed"}`, headers("X-Sume-Event-Id", "evt"), true},
		{"sume", secret, `{"request_id": "r", "event": "run.done"}`, nil, true},
		{"sume", secret, `{"id": "evt", "type": "file.created"}`, headers("X-Sume-Event-Id", "evt"), true},
		{"sume", secret, `{"type": "ping"}`, headers("X-Sume-Event-Id", "evt"), false},
		{"sume", secret, `{"job_id": null, "request_id": null, "id": null, "type": "ping"}`, headers("X-Sume-Event-Id", "evt"), false},
		{"stripe", secret, `{"id": "evt_1", "type": "invoice.paid"}`, nil, true},
		{"standardwebhooks", sw, `{"type": "user.created"}`, headers("webhook-id", "msg_1"), true},
		{"github", secret, `{"action": "opened"}`, headers("X-GitHub-Delivery", "d", "X-GitHub-Event", "issues"), false},
		{"shopify", secret, `{"id": 1}`, headers("X-Shopify-Event-Id", "e", "X-Shopify-Topic", "orders/create"), false},
		{"slack", secret, `{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}`, headers("X-Slack-Retry-Num", "1"), true},
		{"linear", secret, `{"type": "Issue", "action": "create"}`, headers("Linear-Delivery", "d"), false},
		{"square", secret, `{"type": "payment.updated", "event_id": "e"}`, nil, true},
	}
	for _, tt := range tests {
		h := tt.h
		if h == nil {
			h = http.Header{}
		}
		d, err := mustProvider(t, tt.kind, tt.secret).Identify(h, []byte(tt.body))
		if err != nil {
			t.Fatalf("%s %s: %v", tt.kind, tt.body, err)
		}
		if d.KeySigned != tt.want {
			t.Errorf("%s %s: KeySigned %v, want %v", tt.kind, tt.body, d.KeySigned, tt.want)
		}
	}
}

// The helpers the provider kinds' tests share, under the names these tests use.
var (
	macHex       = providertest.MACHex
	headers      = providertest.Headers
	mustProvider = providertest.MustProvider
	checkReject  = providertest.CheckReject
)

// TestNewWithURL: a kind that signs the URL it is posted to (square) needs
// it, and New (which has none) refuses it with a message naming the
// variable; the other kinds ignore a URL.
func TestNewWithURL(t *testing.T) {
	t.Parallel()
	const secret = "square-signature-key-0123"
	tests := []struct {
		name, kind, url string
		wantErr         string // "" when New succeeds
	}{
		{"square with its URL", "square", "https://hooks.example.com/webhooks/sq", ""},
		{"square with an http URL", "square", "http://127.0.0.1:8080/webhooks/sq", ""},
		{"square without a URL", "square", "", "PGINBOX_URL_<NAME>"},
		{"square with a relative URL", "square", "/webhooks/sq", "not an absolute http(s) URL"},
		{"square with another scheme", "square", "ftp://hooks.example.com/sq", "not an absolute http(s) URL"},
		{"square with a fragment", "square", "https://hooks.example.com/sq#x", "not an absolute http(s) URL"},
		{"square with spaces around", "square", " https://hooks.example.com/sq", "not an absolute http(s) URL"},
		{"slack ignores a URL", "slack", "https://hooks.example.com/webhooks/slack", ""},
		{"linear without a URL", "linear", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := verify.NewWithURL(tt.kind, []string{secret}, tt.url)
			if tt.wantErr == "" {
				if err != nil || p.Kind() != tt.kind {
					t.Fatalf("NewWithURL = %v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), secret) || !errors.Is(err, verify.ErrURL) {
				t.Fatalf("NewWithURL error %v, want one containing %q (and never the secret)", err, tt.wantErr)
			}
		})
	}
	if _, err := verify.New("square", []string{secret}); err == nil || !strings.Contains(err.Error(), "PGINBOX_URL_<NAME>") {
		t.Fatalf("New(square) = %v, want the error naming PGINBOX_URL_<NAME>", err)
	}
	if !verify.SignsURL("square") || verify.SignsURL("slack") || verify.SignsURL("nope") {
		t.Fatal("SignsURL: only square signs its URL")
	}
}
