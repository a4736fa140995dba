package linear_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/linear"
	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/runner/verify"
)

var linearHeaders = providertest.LinearHeaders

// linearBody is a Linear delivery sent at unix milliseconds ms.
func linearBody(ms int64) string {
	return `{"action":"create","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Bug"},` +
		`"url":"https://linear.app/acme/issue/ENG-1","createdAt":"2023-11-14T22:13:20.000Z","webhookTimestamp":` + strconv.FormatInt(ms, 10) + `}`
}

func TestLinearVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "lin_wh_current_secret_0123", "lin_wh_previous_secret_0123"
	const delivery = "234d1a4e-b617-4388-90fe-adc3633d6b72"
	now := time.UnixMilli(1_700_000_000_123)
	body := linearBody(now.UnixMilli())
	at := func(ms int64) string { return linearBody(ms) }
	signed := func(secret, body string) http.Header { return linearHeaders(secret, delivery, body) }
	withTS := func(ts string) string { return strings.Replace(body, "1700000000123", ts, 1) }
	raw := func(v string) http.Header { return providertest.Headers("Linear-Signature", v) }
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, signed(secret, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, signed(secret, body), body, 0, ""},
		{"wrong secret", []string{secret}, signed(oldSecret, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, signed(secret, body), strings.Replace(body, "Bug", "Bag", 1), 401, verify.ReasonSignatureMismatch},
		{"timestamp changed after signing", []string{secret}, signed(secret, body), at(now.UnixMilli() + 1), 401, verify.ReasonSignatureMismatch},
		{"upper-case hex", []string{secret}, raw(strings.ToUpper(providertest.MACHex(secret, body))), body, 0, ""},
		{"spaces around", []string{secret}, raw(" " + providertest.MACHex(secret, body) + " "), body, 0, ""},
		{"missing header", []string{secret}, http.Header{}, body, 401, verify.ReasonSignatureMissing},
		{"blank header", []string{secret}, raw("  "), body, 401, verify.ReasonSignatureMissing},
		{"malformed: sha256= prefix", []string{secret}, raw("sha256=" + providertest.MACHex(secret, body)), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: base64", []string{secret}, raw("g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: short", []string{secret}, raw(providertest.MACHex(secret, body)[:62]), body, 401, verify.ReasonSignatureMalformed},
		{"timestamp missing", []string{secret}, signed(secret, `{"action":"create","type":"Issue"}`), `{"action":"create","type":"Issue"}`, 401, verify.ReasonTimestampMissing},
		{"timestamp null", []string{secret}, signed(secret, withTS("null")), withTS("null"), 401, verify.ReasonTimestampMissing},
		{"nested timestamp ignored", []string{secret}, signed(secret, `{"data":{"webhookTimestamp":1700000000123}}`), `{"data":{"webhookTimestamp":1700000000123}}`, 401, verify.ReasonTimestampMissing},
		{"body not json: left to Identify", []string{secret}, signed(secret, "nope"), "nope", 0, ""},
		{"body not an object: left to Identify", []string{secret}, signed(secret, `[{"webhookTimestamp":1}]`), `[{"webhookTimestamp":1}]`, 0, ""},
		{"timestamp a string", []string{secret}, signed(secret, withTS(`"1700000000123"`)), withTS(`"1700000000123"`), 401, verify.ReasonTimestampMalformed},
		{"timestamp with a fraction", []string{secret}, signed(secret, withTS("1700000000123.5")), withTS("1700000000123.5"), 401, verify.ReasonTimestampMalformed},
		{"timestamp with an exponent", []string{secret}, signed(secret, withTS("17e11")), withTS("17e11"), 401, verify.ReasonTimestampMalformed},
		{"timestamp negative", []string{secret}, signed(secret, withTS("-1")), withTS("-1"), 401, verify.ReasonTimestampMalformed},
		{"timestamp of 19 digits", []string{secret}, signed(secret, withTS("1700000000123000000")), withTS("1700000000123000000"), 401, verify.ReasonTimestampMalformed},
		{"seconds instead of milliseconds", []string{secret}, signed(secret, at(now.Unix())), at(now.Unix()), 401, verify.ReasonTimestampOutOfTolerance},
		{"stale timestamp (-5 min 1 ms)", []string{secret}, signed(secret, at(now.UnixMilli()-300_001)), at(now.UnixMilli() - 300_001), 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+5 min 1 ms)", []string{secret}, signed(secret, at(now.UnixMilli()+300_001)), at(now.UnixMilli() + 300_001), 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{secret}, signed(secret, at(now.UnixMilli()-300_000)), at(now.UnixMilli() - 300_000), 0, ""},
		{"within tolerance (+5 min)", []string{secret}, signed(secret, at(now.UnixMilli()+300_000)), at(now.UnixMilli() + 300_000), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "linear", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

func TestLinearIdentify(t *testing.T) {
	t.Parallel()
	const delivery = "234d1a4e-b617-4388-90fe-adc3633d6b72"
	tests := []struct {
		name     string
		delivery string
		body     string
		typ      string
		reason   string
	}{
		{"issue created", delivery, `{"action":"create","type":"Issue","data":{"id":"i1"}}`, "Issue.create", ""},
		{"comment removed", delivery, `{"action":"remove","type":"Comment"}`, "Comment.remove", ""},
		{"delivery missing", "", `{"action":"create","type":"Issue"}`, "", verify.ReasonKeyMissing},
		{"delivery blank", "  ", `{"action":"create","type":"Issue"}`, "", verify.ReasonKeyInvalid},
		{"action missing", delivery, `{"type":"Issue"}`, "", verify.ReasonEventTypeMissing},
		{"type missing", delivery, `{"action":"create"}`, "", verify.ReasonEventTypeMissing},
		{"type not a string", delivery, `{"action":"create","type":{"name":"Issue"}}`, "", verify.ReasonEventTypeMissing},
		{"type with a control character", delivery, `{"action":"create","type":"Iss\u0001ue"}`, "", verify.ReasonEventTypeInvalid},
		{"body not an object", delivery, `[1]`, "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "linear", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.delivery != "" {
				h.Set("Linear-Delivery", tt.delivery)
			}
			d, err := p.Identify(h, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.delivery || d.EventType != tt.typ || string(d.Payload) != tt.body || d.KeySigned {
				t.Fatalf("Identify = %+v, want key %q type %q, unsigned", d, tt.delivery, tt.typ)
			}
		})
	}
}

func FuzzParseLinearSignature(f *testing.F) {
	for _, s := range []string{"", providertest.FuzzSig, " " + providertest.FuzzSig + " ", "sha256=" + providertest.FuzzSig, providertest.FuzzSig[:63], strings.ToUpper(providertest.FuzzSig)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		mac, err := linear.ParseLinearSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, [][]byte{mac})
		}
		providertest.VerifyAll(t, providertest.Headers("Linear-Signature", header), []byte(`{"webhookTimestamp":1614265330000}`))
	})
}

func FuzzLinearWebhookTimestamp(f *testing.F) {
	for _, s := range []string{`{"webhookTimestamp":1700000000123}`, `{"webhookTimestamp":"1"}`, `{"webhookTimestamp":-1}`, `{"webhookTimestamp":1e3}`, `{"webhookTimestamp":null}`, `{}`, `[]`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, ok, err := linear.WebhookTimestamp(body)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if !ok {
			// Nothing to read: Identify must refuse the body.
			if err != nil {
				t.Fatalf("an error %v for a body without a timestamp to read", err)
			}
			if _, err := providertest.MustProvider(t, "linear", "identify-only-secret-0123").Identify(providertest.Headers("Linear-Delivery", "d"), body); err == nil {
				t.Fatalf("no timestamp read, yet Identify accepts %q", body)
			}
		}
		if err == nil && ok && ms < 0 {
			t.Fatalf("accepted a negative timestamp %d", ms)
		}
	})
}
