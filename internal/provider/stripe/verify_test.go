package stripe_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestStripeVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "whsec_stripe_current", "whsec_stripe_previous"
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	tsS := strconv.FormatInt(ts, 10)
	body := `{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}`
	v1 := providertest.MACHex(secret, tsS+"."+body)
	raw := func(v string) http.Header { return providertest.Headers("Stripe-Signature", v) }

	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, providertest.StripeHeader(secret, ts, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, providertest.StripeHeader(secret, ts, body), body, 0, ""},
		{"wrong secret", []string{secret}, providertest.StripeHeader("whsec_other", ts, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, providertest.StripeHeader(secret, ts, body), strings.Replace(body, "evt_1", "evt_2", 1), 401, verify.ReasonSignatureMismatch},
		{"re-serialised body", []string{secret}, providertest.StripeHeader(secret, ts, body), strings.ReplaceAll(body, ",", ", "), 401, verify.ReasonSignatureMismatch},
		{"several v1, one matching", []string{secret}, raw("t=" + tsS + ",v1=" + strings.Repeat("0", 64) + ",v1=" + v1), body, 0, ""},
		{"v0 ignored", []string{secret}, raw("t=" + tsS + ",v1=" + v1 + ",v0=" + providertest.MACHex(secret, body)), body, 0, ""},
		{"spaces around items", []string{secret}, raw("t=" + tsS + ", v1=" + v1), body, 0, ""},
		{"order does not matter", []string{secret}, raw("v1=" + v1 + ",t=" + tsS), body, 0, ""},
		{"t repeated with the same value", []string{secret}, raw("t=" + tsS + ",v1=" + v1 + ",t=" + tsS), body, 0, ""},
		{"missing header", []string{secret}, http.Header{}, body, 401, verify.ReasonSignatureMissing},
		{"blank header", []string{secret}, raw("  "), body, 401, verify.ReasonSignatureMissing},
		{"malformed header: garbage", []string{secret}, raw("garbage"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed header: only v0", []string{secret}, raw("t=" + tsS + ",v0=" + v1), body, 401, verify.ReasonSignatureMalformed},
		{"malformed header: v1 not hex", []string{secret}, raw("t=" + tsS + ",v1=xyz"), body, 401, verify.ReasonSignatureMalformed},
		{"timestamp missing", []string{secret}, raw("v1=" + v1), body, 401, verify.ReasonTimestampMissing},
		{"timestamp empty", []string{secret}, raw("t=,v1=" + v1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp malformed", []string{secret}, raw("t=now,v1=" + v1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp negative", []string{secret}, raw("t=-1,v1=" + v1), body, 401, verify.ReasonTimestampMalformed},
		{"two different timestamps", []string{secret}, raw("t=" + tsS + ",t=1,v1=" + v1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp changed after signing", []string{secret}, raw("t=" + strconv.FormatInt(ts-1, 10) + ",v1=" + v1), body, 401, verify.ReasonSignatureMismatch},
		{"stale timestamp (-6 min)", []string{secret}, providertest.StripeHeader(secret, ts-360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{secret}, providertest.StripeHeader(secret, ts+360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{secret}, providertest.StripeHeader(secret, ts-300, body), body, 0, ""},
		{"within tolerance (+5 min)", []string{secret}, providertest.StripeHeader(secret, ts+300, body), body, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "stripe", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

func TestStripeIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		key    string
		typ    string
		reason string
	}{
		{"event", `{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`, "evt_1", "invoice.paid", ""},
		{"nested id ignored", `{"type":"invoice.paid","data":{"object":{"id":"in_1"}}}`, "", "", verify.ReasonKeyMissing},
		{"null id", `{"id":null,"type":"invoice.paid"}`, "", "", verify.ReasonKeyMissing},
		{"empty id", `{"id":"","type":"invoice.paid"}`, "", "", verify.ReasonKeyInvalid},
		{"object id", `{"id":{},"type":"invoice.paid"}`, "", "", verify.ReasonKeyInvalid},
		{"type missing", `{"id":"evt_1"}`, "", "", verify.ReasonEventTypeMissing},
		{"type not a string", `{"id":"evt_1","type":["a"]}`, "", "", verify.ReasonEventTypeMissing},
		{"body not json", `id=evt_1&type=invoice.paid`, "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "stripe", "whsec_identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := p.Identify(http.Header{}, []byte(tt.body))
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

func FuzzParseStripeSignature(f *testing.F) {
	for _, s := range []string{"", "t=1614265330,v1=" + providertest.FuzzSig, "t=1,t=2,v1=" + providertest.FuzzSig, "v1=" + providertest.FuzzSig, "t=,v1=" + providertest.FuzzSig, "t=1614265330,v0=" + providertest.FuzzSig, "t=1614265330, v1=" + providertest.FuzzSig + ",v1=", "=,=,=", "t=99999999999999999999,v1=" + providertest.FuzzSig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := stripe.ParseStripeSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, sigs)
			if ts == "" {
				t.Fatal("accepted a header without t")
			}
		}
		providertest.VerifyAll(t, providertest.Headers("Stripe-Signature", header), []byte(`{}`))
	})
}

// benchStripeBody is a ~2 KiB Stripe event.
var benchStripeBody = `{"id":"evt_1PQ","object":"event","type":"payment_intent.succeeded","data":{"object":{"description":"` +
	strings.Repeat("x", 2000) + `"}}}`

func BenchmarkStripeVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	p := providertest.MustProvider(b, "stripe", "whsec_previous", "whsec_current")
	ts := strconv.FormatInt(now.Unix(), 10)
	h := providertest.Headers("Stripe-Signature", "t="+ts+",v1="+providertest.MACHex("whsec_current", ts+"."+benchStripeBody)+",v0=00")
	body := []byte(benchStripeBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Verify(h, body, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStripeIdentify(b *testing.B) {
	p := providertest.MustProvider(b, "stripe", "whsec_current")
	body := []byte(benchStripeBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Identify(http.Header{}, body); err != nil {
			b.Fatal(err)
		}
	}
}
