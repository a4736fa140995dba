package standardwebhooks_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

// rfc8032Key returns the private key of RFC 8032's Ed25519 test n (1 or 2):
// fixed keys, so a failure is reproducible.
func rfc8032Key(t testing.TB, n int) ed25519.PrivateKey {
	t.Helper()
	seeds := map[int]string{
		1: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
		2: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
	}
	seed, err := hex.DecodeString(seeds[n])
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// TestStandardWebhooksV1a: asymmetric Standard Webhooks signatures
// (v1a,<base64 Ed25519 signature> over "<id>.<ts>.<body>") verify with a
// whpk_ public key, alone or listed beside whsec_ secrets, with the
// tolerance and rejection reasons of v1.
func TestStandardWebhooksV1a(t *testing.T) {
	t.Parallel()
	priv, other := rfc8032Key(t, 1), rfc8032Key(t, 2)
	pub, otherPub := testsign.Whpk(priv), testsign.Whpk(other)
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	now := time.Unix(1_700_000_000, 0)
	body := `{"type":"invoice.paid","data":{"id":"in_1"}}`
	good := testsign.StandardWebhooksV1a(priv, id, body, now)
	v1a := good.Get("webhook-signature")
	v1 := testsign.StandardWebhooks(whsec, id, body, now).Get("webhook-signature")
	with := func(name, value string) http.Header {
		h := good.Clone()
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
		{"valid", []string{pub}, good, body, 0, ""},
		{"valid with an unpadded whpk_", []string{strings.TrimRight(pub, "=")}, good, body, 0, ""},
		{"valid with the second of two public keys", []string{otherPub, pub}, good, body, 0, ""},
		{"v1a beside a whsec_ secret", []string{whsec, pub}, good, body, 0, ""},
		{"v1 beside a whpk_ key", []string{pub, whsec}, with("webhook-signature", v1), body, 0, ""},
		{"both versions sent, v1a matching", []string{pub}, with("webhook-signature", v1+" "+v1a), body, 0, ""},
		{"both versions sent, v1 matching", []string{whsec}, with("webhook-signature", v1a+" "+v1), body, 0, ""},
		{"wrong public key", []string{otherPub}, good, body, 401, verify.ReasonSignatureMismatch},
		{"v1a with only a whsec_ secret", []string{whsec}, good, body, 401, verify.ReasonSignatureMismatch},
		{"v1 with only a whpk_ key", []string{pub}, with("webhook-signature", v1), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{pub}, good, strings.Replace(body, "in_1", "in_2", 1), 401, verify.ReasonSignatureMismatch},
		{"webhook-id changed after signing", []string{pub}, with("webhook-id", "msg_other"), body, 401, verify.ReasonSignatureMismatch},
		{"timestamp changed after signing", []string{pub}, with("webhook-timestamp", "1700000001"), body, 401, verify.ReasonSignatureMismatch},
		{"v1a signature under the v1 label", []string{pub}, with("webhook-signature", "v1,"+v1a[4:]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: 63-byte v1a", []string{pub}, with("webhook-signature", "v1a,"+base64.StdEncoding.EncodeToString(make([]byte, 63))), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: unpadded v1a", []string{pub}, with("webhook-signature", strings.TrimRight(v1a, "=")), body, 401, verify.ReasonSignatureMalformed},
		{"missing signature", []string{pub}, with("webhook-signature", ""), body, 401, verify.ReasonSignatureMissing},
		{"missing timestamp", []string{pub}, with("webhook-timestamp", ""), body, 401, verify.ReasonTimestampMissing},
		{"stale timestamp (-6 min)", []string{pub}, testsign.StandardWebhooksV1a(priv, id, body, now.Add(-6*time.Minute)), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{pub}, testsign.StandardWebhooksV1a(priv, id, body, now.Add(6*time.Minute)), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{pub}, testsign.StandardWebhooksV1a(priv, id, body, now.Add(-5*time.Minute)), body, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "standardwebhooks", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

// TestStandardWebhooksWhpkSecrets: a whpk_ key that is not base64 or not 32
// bytes, or a whsk_ signing key pasted instead of its public key, is refused
// at start-up with the secret's position, never its value.
func TestStandardWebhooksWhpkSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ secret, want string }{
		{"whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31)), "31 bytes"},
		{"whpk_!!not-base64!!", "not base64"},
		{"whsk_" + base64.StdEncoding.EncodeToString(make([]byte, 64)), "public key (whpk_)"},
	} {
		_, err := verify.New("standardwebhooks", []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", tc.secret})
		if err == nil || !strings.Contains(err.Error(), "secret 2 of 2") || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("secret %.8s…: error %v, want one naming secret 2 of 2 and %q", tc.secret, err, tc.want)
		}
		if strings.Contains(err.Error(), tc.secret[5:]) {
			t.Fatalf("the error repeats the secret: %v", err)
		}
	}
}

func BenchmarkStandardWebhooksVerifyV1a(b *testing.B) {
	priv := rfc8032Key(b, 1)
	now := time.Unix(1_700_000_000, 0)
	body := `{"type":"invoice.paid","data":{"id":"in_1","description":"` + strings.Repeat("x", 2000) + `"}}`
	h := testsign.StandardWebhooksV1a(priv, "msg_1", body, now)
	p := providertest.MustProvider(b, "standardwebhooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", testsign.Whpk(priv))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Verify(h, []byte(body), now); err != nil {
			b.Fatal(err)
		}
	}
}
