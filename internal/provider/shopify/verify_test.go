package shopify_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/shopify"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestShopifyVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "shpss_current_secret", "shpss_previous_secret"
	body := `{"id":820982911946154508,"email":"jon@example.com"}`
	sig := providertest.ShopifyHeader(secret, body).Get("X-Shopify-Hmac-Sha256")
	raw := func(v string) http.Header { return providertest.Headers("X-Shopify-Hmac-Sha256", v) }
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, providertest.ShopifyHeader(secret, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, providertest.ShopifyHeader(secret, body), body, 0, ""},
		{"wrong secret", []string{secret}, providertest.ShopifyHeader("other", body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, providertest.ShopifyHeader(secret, body), strings.Replace(body, "jon", "jan", 1), 401, verify.ReasonSignatureMismatch},
		{"missing header", []string{secret}, http.Header{}, body, 401, verify.ReasonSignatureMissing},
		{"malformed: hex instead of base64", []string{secret}, raw(providertest.MACHex(secret, body)), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: not base64", []string{secret}, raw("%%%"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: unpadded", []string{secret}, raw(strings.TrimRight(sig, "=")), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: short", []string{secret}, raw("AAAA"), body, 401, verify.ReasonSignatureMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "shopify", tt.secrets...).Verify(tt.h, []byte(tt.body), time.Time{})
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

func TestShopifyIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     string
		topic  string
		body   string
		reason string
	}{
		{"valid", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders/create", `{"id":1}`, ""},
		{"event id missing", "", "orders/create", `{"id":1}`, verify.ReasonKeyMissing},
		{"event id blank", "  ", "orders/create", `{"id":1}`, verify.ReasonKeyInvalid},
		{"topic missing", "e1", "", `{"id":1}`, verify.ReasonEventTypeMissing},
		{"body not an object", "e1", "orders/create", `[1]`, verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "shopify", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.id != "" {
				h.Set("X-Shopify-Event-Id", tt.id)
			}
			if tt.topic != "" {
				h.Set("X-Shopify-Topic", tt.topic)
			}
			d, err := p.Identify(h, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.id || d.EventType != tt.topic || string(d.Payload) != tt.body {
				t.Fatalf("Identify = %+v, want key %q type %q", d, tt.id, tt.topic)
			}
		})
	}
}

func FuzzParseShopifySignature(f *testing.F) {
	for _, s := range []string{"", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "====", "AAAA", " g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := shopify.ParseShopifySignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, [][]byte{sig})
		}
		providertest.VerifyAll(t, providertest.Headers("X-Shopify-Hmac-Sha256", header), []byte(`{}`))
	})
}
