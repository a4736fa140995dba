package standardwebhooks_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/standardwebhooks"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestStandardWebhooksVerify(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const oldSecret = "whsec_c2VjcmV0LXByZXZpb3VzLWtleS0xMjM0NTY="
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	body := `{"type":"invoice.paid","data":{"id":"in_1"}}`
	good := providertest.SWHeaders(t, secret, id, ts, body)
	sig := good.Get("webhook-signature")
	with := func(name, value string) http.Header {
		h := providertest.SWHeaders(t, secret, id, ts, body)
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, good, body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, good, body, 0, ""},
		{"valid with an unprefixed secret", []string{strings.TrimPrefix(secret, "whsec_")}, good, body, 0, ""},
		{"wrong secret", []string{oldSecret}, good, body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, good, strings.Replace(body, "in_1", "in_2", 1), 401, verify.ReasonSignatureMismatch},
		{"webhook-id changed after signing", []string{secret}, with("webhook-id", "msg_other"), body, 401, verify.ReasonSignatureMismatch},
		{"webhook-id removed after signing", []string{secret}, with("webhook-id", ""), body, 401, verify.ReasonSignatureMismatch},
		{"several signatures, one matching", []string{secret}, with("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))+" "+sig), body, 0, ""},
		{"other versions ignored", []string{secret}, with("webhook-signature", "v1a,"+sig[3:]+" v2,abc "+sig), body, 0, ""},
		{"missing signature", []string{secret}, with("webhook-signature", ""), body, 401, verify.ReasonSignatureMissing},
		{"missing timestamp", []string{secret}, with("webhook-timestamp", ""), body, 401, verify.ReasonTimestampMissing},
		{"malformed: comma separated", []string{secret}, with("webhook-signature", sig+","+sig), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: no version", []string{secret}, with("webhook-signature", sig[3:]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: only v1a", []string{secret}, with("webhook-signature", "v1a,"+sig[3:]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: not base64", []string{secret}, with("webhook-signature", "v1,!!!"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed timestamp", []string{secret}, with("webhook-timestamp", "1.7e9"), body, 401, verify.ReasonTimestampMalformed},
		{"stale timestamp (-6 min)", []string{secret}, providertest.SWHeaders(t, secret, id, ts-360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{secret}, providertest.SWHeaders(t, secret, id, ts+360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{secret}, providertest.SWHeaders(t, secret, id, ts-300, body), body, 0, ""},
		{"within tolerance (+5 min)", []string{secret}, providertest.SWHeaders(t, secret, id, ts+300, body), body, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "standardwebhooks", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

// TestStandardWebhooksSpecVector checks the example of the Standard Webhooks
// specification. Its body has no type, so only Verify applies.
func TestStandardWebhooksSpecVector(t *testing.T) {
	t.Parallel()
	p := providertest.MustProvider(t, "standardwebhooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	h := providertest.Headers(
		"webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		"webhook-timestamp", "1614265330",
		"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
	)
	body := []byte(`{"test": 2432232314}`)
	providertest.CheckReject(t, p.Verify(h, body, time.Unix(1614265330, 0)), 0, "")
	providertest.CheckReject(t, p.Verify(h, body, time.Unix(1614265330+360, 0)), 401, verify.ReasonTimestampOutOfTolerance)
	providertest.CheckReject(t, p.Verify(h, []byte(`{"test":2432232314}`), time.Unix(1614265330, 0)), 401, verify.ReasonSignatureMismatch)
}

func TestStandardWebhooksIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     string
		body   string
		key    string
		typ    string
		reason string
	}{
		{"valid", "msg_1", `{"type":"invoice.paid","data":{}}`, "msg_1", "invoice.paid", ""},
		{"id missing", "", `{"type":"invoice.paid"}`, "", "", verify.ReasonKeyMissing},
		{"id with control char", "msg\x7f", `{"type":"invoice.paid"}`, "", "", verify.ReasonKeyInvalid},
		{"type missing", "msg_1", `{"test": 2432232314}`, "", "", verify.ReasonEventTypeMissing},
		{"nested type ignored", "msg_1", `{"data":{"type":"x"}}`, "", "", verify.ReasonEventTypeMissing},
		{"body not json", "msg_1", `{"type":"x",}`, "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "standardwebhooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.id != "" {
				h.Set("webhook-id", tt.id)
			}
			d, err := p.Identify(h, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.key || d.EventType != tt.typ || string(d.Payload) != tt.body {
				t.Fatalf("Identify = %+v, want key %q type %q", d, tt.key, tt.typ)
			}
		})
	}
}

func FuzzParseStandardSignatures(f *testing.F) {
	for _, s := range []string{"", "v1a," + strings.Repeat("A", 86) + "==", strings.Repeat("v1a,"+strings.Repeat("A", 86)+"== ", 3), "v1a," + strings.Repeat("A", 86), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1a,abc v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1,", "v1,,", ",", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "v2,x v1,y"} {
		f.Add(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330")
	}
	f.Fuzz(func(t *testing.T, header, id, ts string) {
		sigs, asym, err := standardwebhooks.ParseStandardSignatures(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			if len(sigs) > 0 {
				providertest.CheckSigs(t, sigs)
			} else if len(asym) == 0 {
				t.Fatal("accepted a header with no signature")
			}
			if len(asym) > verify.MaxAsymmetricSignatures {
				t.Fatalf("accepted %d v1a signatures, more than %d", len(asym), verify.MaxAsymmetricSignatures)
			}
			for _, s := range asym {
				if len(s) != 64 {
					t.Fatalf("accepted a %d-byte v1a signature", len(s))
				}
			}
		}
		providertest.VerifyAll(t, providertest.Headers("webhook-signature", header, "webhook-id", id, "webhook-timestamp", ts), []byte(`{"test": 2432232314}`))
	})
}
