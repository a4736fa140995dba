package paddle_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/paddle"
	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestPaddleVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "pdl_ntfset_01current_5b7d0c9e", "pdl_ntfset_01previous_c3a1f2"
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	tsS := strconv.FormatInt(ts, 10)
	body := `{"event_id":"evt_01h8441jx8x1q971q9ksksqh82","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:20Z","data":{"id":"txn_1","customer_id":"ctm_1"}}`
	h1 := providertest.MACHex(secret, tsS+":"+body)
	raw := func(v string) http.Header { return providertest.Headers("Paddle-Signature", v) }

	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, providertest.PaddleHeader(secret, ts, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, providertest.PaddleHeader(secret, ts, body), body, 0, ""},
		{"rotation: two h1, the second matching", []string{secret}, raw("ts=" + tsS + ";h1=" + providertest.MACHex(oldSecret, tsS+":"+body) + ";h1=" + h1), body, 0, ""},
		{"wrong secret", []string{secret}, providertest.PaddleHeader("pdl_ntfset_01other_0e94aa", ts, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, providertest.PaddleHeader(secret, ts, body), strings.Replace(body, "txn_1", "txn_2", 1), 401, verify.ReasonSignatureMismatch},
		{"re-serialised body", []string{secret}, providertest.PaddleHeader(secret, ts, body), strings.ReplaceAll(body, ",", ", "), 401, verify.ReasonSignatureMismatch},
		{"signed with . instead of :", []string{secret}, raw("ts=" + tsS + ";h1=" + providertest.MACHex(secret, tsS+"."+body)), body, 401, verify.ReasonSignatureMismatch},
		{"unknown schemes ignored", []string{secret}, raw("ts=" + tsS + ";h2=abc;h1=" + h1), body, 0, ""},
		{"spaces around items", []string{secret}, raw(" ts=" + tsS + " ; h1=" + h1 + " "), body, 0, ""},
		{"order does not matter", []string{secret}, raw("h1=" + h1 + ";ts=" + tsS), body, 0, ""},
		{"ts repeated with the same value", []string{secret}, raw("ts=" + tsS + ";h1=" + h1 + ";ts=" + tsS), body, 0, ""},
		{"missing header", []string{secret}, http.Header{}, body, 401, verify.ReasonSignatureMissing},
		{"blank header", []string{secret}, raw("  "), body, 401, verify.ReasonSignatureMissing},
		{"malformed: garbage", []string{secret}, raw("garbage"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: comma separated", []string{secret}, raw("ts=" + tsS + ",h1=" + h1), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: h1 not hex", []string{secret}, raw("ts=" + tsS + ";h1=xyz"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: upper-case scheme", []string{secret}, raw("ts=" + tsS + ";H1=" + h1), body, 401, verify.ReasonSignatureMalformed},
		{"timestamp missing", []string{secret}, raw("h1=" + h1), body, 401, verify.ReasonTimestampMissing},
		{"timestamp empty", []string{secret}, raw("ts=;h1=" + h1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp malformed", []string{secret}, raw("ts=now;h1=" + h1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp in milliseconds is signed but stale", []string{secret}, raw("ts=" + tsS + "000;h1=" + providertest.MACHex(secret, tsS+"000:"+body)), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"two different timestamps", []string{secret}, raw("ts=" + tsS + ";ts=1;h1=" + h1), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp changed after signing", []string{secret}, raw("ts=" + strconv.FormatInt(ts-1, 10) + ";h1=" + h1), body, 401, verify.ReasonSignatureMismatch},
		{"stale timestamp (-6 min)", []string{secret}, providertest.PaddleHeader(secret, ts-360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{secret}, providertest.PaddleHeader(secret, ts+360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{secret}, providertest.PaddleHeader(secret, ts-300, body), body, 0, ""},
		{"within tolerance (+5 min)", []string{secret}, providertest.PaddleHeader(secret, ts+300, body), body, 0, ""},
		{"nine signatures", []string{secret}, raw("ts=" + tsS + strings.Repeat(";h1="+h1, 9)), body, 401, verify.ReasonTooManySignatures},
		{"header too large", []string{secret}, raw("ts=" + tsS + ";h1=" + h1 + ";x=" + strings.Repeat("a", 4096)), body, 401, verify.ReasonSignatureHeaderTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "paddle", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

func TestPaddleIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		key    string
		typ    string
		reason string
	}{
		{"event", `{"event_id":"evt_1","event_type":"subscription.updated","data":{"id":"sub_1"}}`, "evt_1", "subscription.updated", ""},
		{"notification_id is not the key", `{"notification_id":"ntf_1","event_type":"subscription.updated"}`, "", "", verify.ReasonKeyMissing},
		{"nested event_id ignored", `{"event_type":"subscription.updated","data":{"event_id":"evt_1"}}`, "", "", verify.ReasonKeyMissing},
		{"null event_id", `{"event_id":null,"event_type":"subscription.updated"}`, "", "", verify.ReasonKeyMissing},
		{"empty event_id", `{"event_id":"","event_type":"subscription.updated"}`, "", "", verify.ReasonKeyInvalid},
		{"object event_id", `{"event_id":{},"event_type":"subscription.updated"}`, "", "", verify.ReasonKeyInvalid},
		{"event_type missing", `{"event_id":"evt_1"}`, "", "", verify.ReasonEventTypeMissing},
		{"type is not event_type", `{"event_id":"evt_1","type":"subscription.updated"}`, "", "", verify.ReasonEventTypeMissing},
		{"event_type not a string", `{"event_id":"evt_1","event_type":["a"]}`, "", "", verify.ReasonEventTypeMissing},
		{"body not json", `event_id=evt_1`, "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "paddle", "pdl_ntfset_identify-only-0123")
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
				t.Fatalf("Identify = %+v, want key %q type %q, signed", d, tt.key, tt.typ)
			}
		})
	}
}

func FuzzParsePaddleSignature(f *testing.F) {
	for _, s := range []string{"", "ts=1614265330;h1=" + providertest.FuzzSig, "ts=1;ts=2;h1=" + providertest.FuzzSig, "h1=" + providertest.FuzzSig, "ts=;h1=" + providertest.FuzzSig,
		"ts=1614265330;h2=" + providertest.FuzzSig, "ts=1614265330; h1=" + providertest.FuzzSig + ";h1=", "=;=;=", "ts=99999999999999999999;h1=" + providertest.FuzzSig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := paddle.ParsePaddleSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, sigs)
			if ts == "" {
				t.Fatal("accepted a header without ts")
			}
		}
		providertest.VerifyAll(t, providertest.Headers("Paddle-Signature", header), []byte(`{}`))
	})
}
