package square_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/square"
	"github.com/pginbox/pginbox/runner/verify"
)

var squareHeader = providertest.SquareHeader

func TestSquareVerify(t *testing.T) {
	t.Parallel()
	const key, oldKey = "sq0wsk-current-signature-key", "sq0wsk-previous-signature-key"
	url := providertest.NotificationURL // the URL providertest.MustProvider builds square verifiers with
	body := `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{"type":"payment"}}`
	sig := squareHeader(key, url, body).Get("X-Square-HmacSha256-Signature")
	raw := func(v string) http.Header { return providertest.Headers("X-Square-HmacSha256-Signature", v) }
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{key}, squareHeader(key, url, body), body, 0, ""},
		{"valid with the second of two keys", []string{oldKey, key}, squareHeader(key, url, body), body, 0, ""},
		{"wrong key", []string{key}, squareHeader(oldKey, url, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{key}, squareHeader(key, url, body), strings.Replace(body, "updated", "created", 1), 401, verify.ReasonSignatureMismatch},
		{"signed for another path (a proxy rewrote it)", []string{key}, squareHeader(key, "https://hooks.example.com/square", body), body, 401, verify.ReasonSignatureMismatch},
		{"signed for http (a proxy ended TLS)", []string{key}, squareHeader(key, strings.Replace(url, "https:", "http:", 1), body), body, 401, verify.ReasonSignatureMismatch},
		{"signed over the body alone", []string{key}, squareHeader(key, "", body), body, 401, verify.ReasonSignatureMismatch},
		{"spaces around", []string{key}, raw(" " + sig + " "), body, 0, ""},
		{"missing header", []string{key}, providertest.Headers("X-Square-Signature", "sha1-is-ignored"), body, 401, verify.ReasonSignatureMissing},
		{"blank header", []string{key}, raw("   "), body, 401, verify.ReasonSignatureMissing},
		{"malformed: hex", []string{key}, raw(providertest.MACHex(key, url+body)), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: unpadded", []string{key}, raw(strings.TrimRight(sig, "=")), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: short", []string{key}, raw("AAAA"), body, 401, verify.ReasonSignatureMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "square", tt.secrets...).Verify(tt.h, []byte(tt.body), time.Time{})
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

// TestSquareNeedsURL: a square verifier is built only with a notification URL.
func TestSquareNeedsURL(t *testing.T) {
	t.Parallel()
	if _, err := square.NewVerifier([]string{"sq0wsk-current-signature-key"}); err == nil || !strings.Contains(err.Error(), "PGINBOX_URL_<NAME>") {
		t.Fatalf("NewVerifier without a URL = %v, want an error naming PGINBOX_URL_<NAME>", err)
	}
	for _, u := range []string{"", "hooks.example.com/x", "https:///x", "mailto:a@b", "https://h/x#frag", "https://h/x "} {
		if _, err := square.NewURLVerifier(u, []string{"sq0wsk-current-signature-key"}); err == nil {
			t.Errorf("NewURLVerifier(%q) accepted the URL", u)
		}
	}
}

func TestSquareIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		key    string
		typ    string
		reason string
	}{
		{"payment updated", `{"type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{"id":"p1","type":"payment"}}`, "13b867cf-db3d-4b1c-90b6-2f32a9d78124", "payment.updated", ""},
		{"nested event_id ignored", `{"type":"payment.updated","data":{"event_id":"e"}}`, "", "", verify.ReasonKeyMissing},
		{"event_id not a string or integer", `{"type":"payment.updated","event_id":true}`, "", "", verify.ReasonKeyInvalid},
		{"type missing (data.type ignored)", `{"event_id":"e1","data":{"type":"payment"}}`, "", "", verify.ReasonEventTypeMissing},
		{"body not json", `event_id=e1`, "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "square", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := p.Identify(http.Header{}, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.key || d.EventType != tt.typ || string(d.Payload) != tt.body || !d.KeySigned {
				t.Fatalf("Identify = %+v, want key %q type %q", d, tt.key, tt.typ)
			}
		})
	}
}

func FuzzParseSquareSignature(f *testing.F) {
	for _, s := range []string{"", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "====", " g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= ", providertest.FuzzSig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		mac, err := square.ParseSquareSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, [][]byte{mac})
		}
		providertest.VerifyAll(t, providertest.Headers("X-Square-HmacSha256-Signature", header), []byte(`{}`))
	})
}
