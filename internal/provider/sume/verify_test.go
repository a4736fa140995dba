package sume_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/sume"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestSumeVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "sume_secret_current", "sume_secret_previous"
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	body := `{"event":"job.completed","job_id":"job_123","data":{"status":"COMPLETED"}}`
	good := "v1=" + providertest.MACHex(secret, strconv.FormatInt(ts, 10)+"."+body)
	with := func(h http.Header, name, value string) http.Header { h.Set(name, value); return h }
	without := func(h http.Header, name string) http.Header { h.Del(name); return h }

	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, providertest.SumeHeaders(secret, ts, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, providertest.SumeHeaders(secret, ts, body), body, 0, ""},
		{"valid with the first of two secrets", []string{secret, oldSecret}, providertest.SumeHeaders(secret, ts, body), body, 0, ""},
		{"wrong secret", []string{secret}, providertest.SumeHeaders("not_the_secret", ts, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, providertest.SumeHeaders(secret, ts, body), strings.Replace(body, "job_123", "job_124", 1), 401, verify.ReasonSignatureMismatch},
		{"re-serialised body", []string{secret}, providertest.SumeHeaders(secret, ts, body), strings.ReplaceAll(body, ":", ": "), 401, verify.ReasonSignatureMismatch},
		{"empty body signed", []string{secret}, providertest.SumeHeaders(secret, ts, ""), "", 0, ""},
		{"timestamp changed after signing", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp", strconv.FormatInt(ts+1, 10)), body, 401, verify.ReasonSignatureMismatch},
		{"missing signature", []string{secret}, without(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature"), body, 401, verify.ReasonSignatureMissing},
		{"blank signature", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", " , "), body, 401, verify.ReasonSignatureMissing},
		{"missing timestamp", []string{secret}, without(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp"), body, 401, verify.ReasonTimestampMissing},
		{"malformed signature: not hex", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v1=zz"), body, 401, verify.ReasonSignatureMalformed},
		{"malformed signature: no scheme", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", good[3:]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed signature: short", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", good[:len(good)-2]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed signature: only other schemes", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v0="+good[3:]+" sha256="+good[3:]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed timestamp: letters", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp", "yesterday"), body, 401, verify.ReasonTimestampMalformed},
		{"malformed timestamp: sign", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp", "+"+strconv.FormatInt(ts, 10)), body, 401, verify.ReasonTimestampMalformed},
		{"malformed timestamp: milliseconds fraction", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp", strconv.FormatInt(ts, 10)+".5"), body, 401, verify.ReasonTimestampMalformed},
		{"malformed timestamp: overflow", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Timestamp", strings.Repeat("9", 30)), body, 401, verify.ReasonTimestampMalformed},
		{"stale timestamp (-6 min)", []string{secret}, providertest.SumeHeaders(secret, ts-360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{secret}, providertest.SumeHeaders(secret, ts+360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"just within tolerance (-5 min)", []string{secret}, providertest.SumeHeaders(secret, ts-300, body), body, 0, ""},
		{"just within tolerance (+5 min)", []string{secret}, providertest.SumeHeaders(secret, ts+300, body), body, 0, ""},
		{"just out of tolerance (-5 min 1 s)", []string{secret}, providertest.SumeHeaders(secret, ts-301, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"stale and wrong secret: the timestamp is checked first", []string{secret}, providertest.SumeHeaders("nope", ts-3600, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"several entries, comma separated", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v1="+strings.Repeat("00", 32)+","+good), body, 0, ""},
		{"several entries, space separated", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", good+" v1="+strings.Repeat("ab", 32)), body, 0, ""},
		{"unknown schemes and a bad v1 ignored", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v2=abc, v1=zz, t=1 ,"+good), body, 0, ""},
		{"upper-case hex", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v1="+strings.ToUpper(good[3:])), body, 0, ""},
		{"signature over body only", []string{secret}, with(providertest.SumeHeaders(secret, ts, body), "X-Sume-Signature", "v1="+providertest.MACHex(secret, body)), body, 401, verify.ReasonSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := providertest.MustProvider(t, "sume", tt.secrets...)
			err := p.Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
			if err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "job_123")) {
				t.Fatalf("error %q leaks the secret or the body", err)
			}
		})
	}
}

func TestSumeIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		headerID string // X-Sume-Event-Id; "" = not sent
		key      string
		typ      string
		reason   string // "" when accepted
	}{
		{"job webhook", `{"event":"job.completed","job_id":"job_1"}`, "", "job_1", "job.completed", ""},
		{"job_id wins over request_id and id", `{"event":"job.completed","id":"evt_9","request_id":"req_1","job_id":"job_1"}`, "", "job_1", "job.completed", ""},
		{"job_id wins over the header", `{"event":"job.failed","job_id":"job_1"}`, "evt_9", "job_1", "job.failed", ""},
		{"format run keyed on Envelope request_id", `{"event":"format.completed","request_id":"req_1","payload":{"request_id":"req_nested"}}`, "", "req_1", "format.completed", ""},
		{"request_id wins over id", `{"event":"format.completed","request_id":"req_1","id":"evt_1"}`, "evt_1", "req_1", "format.completed", ""},
		{"request_id not compared with the header", `{"event":"format.completed","request_id":"req_1"}`, "evt_other", "req_1", "format.completed", ""},
		{"nested payload.request_id ignored", `{"event":"format.completed","payload":{"request_id":"req_nested"}}`, "", "", "", verify.ReasonKeyMissing},
		{"nested job_id ignored, id used", `{"type":"file.created","id":"evt_1","data":{"job_id":"job_nested"}}`, "", "evt_1", "file.created", ""},
		{"resource event keyed on id", `{"type":"file.created","id":"evt_1"}`, "", "evt_1", "file.created", ""},
		{"header equal to id", `{"type":"file.created","id":"evt_1"}`, "evt_1", "evt_1", "file.created", ""},
		{"header differs from id", `{"type":"file.created","id":"evt_1"}`, "evt_2", "", "", verify.ReasonEventIDMismatch},
		{"header differs from id only in case", `{"type":"file.created","id":"evt_1"}`, "EVT_1", "", "", verify.ReasonEventIDMismatch},
		{"header differs from integer id", `{"type":"file.created","id":17}`, "18", "", "", verify.ReasonEventIDMismatch},
		{"header equal to integer id", `{"type":"file.created","id":17}`, "17", "17", "file.created", ""},
		{"job webhook with id equal to header", `{"event":"job.completed","job_id":"job_1","id":"evt_1"}`, "evt_1", "job_1", "job.completed", ""},
		{"job webhook with id differing from header", `{"event":"job.completed","job_id":"job_1","id":"evt_1"}`, "evt_2", "", "", verify.ReasonEventIDMismatch},
		{"job webhook with object id and header", `{"event":"job.completed","job_id":"job_1","id":{"v":"evt_1"}}`, "evt_1", "", "", verify.ReasonEventIDMismatch},
		{"job webhook with object id, no header", `{"event":"job.completed","job_id":"job_1","id":{"v":"evt_1"}}`, "", "job_1", "job.completed", ""},
		{"header used when the body has no key", `{"type":"ping"}`, "evt_h", "evt_h", "ping", ""},
		{"header used when id is null", `{"type":"ping","id":null}`, "evt_h", "evt_h", "ping", ""},
		{"no key at all", `{"type":"ping"}`, "", "", "", verify.ReasonKeyMissing},
		{"integer job_id gives its digits", `{"event":"job.completed","job_id":9007199254740993}`, "", "9007199254740993", "job.completed", ""},
		{"integer id", `{"type":"file.created","id":42}`, "", "42", "file.created", ""},
		{"null job_id falls through to request_id", `{"event":"format.completed","job_id":null,"request_id":"req_1"}`, "", "req_1", "format.completed", ""},
		{"null job_id and request_id fall through to id", `{"event":"x","job_id":null,"request_id":null,"id":"evt_1"}`, "", "evt_1", "x", ""},
		{"empty-string job_id is invalid", `{"event":"job.completed","job_id":""}`, "", "", "", verify.ReasonKeyInvalid},
		{"object job_id is invalid", `{"event":"job.completed","job_id":{"id":"job_1"}}`, "", "", "", verify.ReasonKeyInvalid},
		{"array request_id is invalid", `{"event":"format.completed","request_id":["r"]}`, "", "", "", verify.ReasonKeyInvalid},
		{"boolean id is invalid", `{"type":"x","id":true}`, "", "", "", verify.ReasonKeyInvalid},
		{"float id is invalid", `{"type":"x","id":1.5}`, "", "", "", verify.ReasonKeyInvalid},
		{"key with a control char is invalid", `{"type":"x","id":"a\u0007b"}`, "", "", "", verify.ReasonKeyInvalid},
		{"key over 255 bytes is invalid", `{"type":"x","id":"` + strings.Repeat("i", 256) + `"}`, "", "", "", verify.ReasonKeyInvalid},
		{"header key with control char is invalid", `{"type":"x"}`, "evt\x01", "", "", verify.ReasonKeyInvalid},
		{"header key with NUL is invalid", `{"type":"x"}`, "evt\x00", "", "", verify.ReasonKeyInvalid},
		{"header key over 255 bytes is invalid", `{"type":"x"}`, strings.Repeat("h", 256), "", "", verify.ReasonKeyInvalid},
		{"event wins over type", `{"event":"job.completed","type":"job","job_id":"j"}`, "", "j", "job.completed", ""},
		{"type when event is absent", `{"type":"file.created","id":"e"}`, "", "e", "file.created", ""},
		{"type when event is empty", `{"event":"","type":"file.created","id":"e"}`, "", "e", "file.created", ""},
		{"type when event is not a string", `{"event":{"name":"x"},"type":"file.created","id":"e"}`, "", "e", "file.created", ""},
		{"event type missing", `{"job_id":"j"}`, "", "", "", verify.ReasonEventTypeMissing},
		{"event type empty", `{"job_id":"j","event":"","type":""}`, "", "", "", verify.ReasonEventTypeMissing},
		{"event type not a string", `{"job_id":"j","type":7}`, "", "", "", verify.ReasonEventTypeMissing},
		{"event type nested only", `{"job_id":"j","data":{"event":"x"}}`, "", "", "", verify.ReasonEventTypeMissing},
		{"event type blank", `{"job_id":"j","event":"  "}`, "", "", "", verify.ReasonEventTypeInvalid},
		{"event type too long", `{"job_id":"j","event":"` + strings.Repeat("e", 256) + `"}`, "", "", "", verify.ReasonEventTypeInvalid},
		{"event type with newline", `{"job_id":"j","event":"a\nb"}`, "", "", "", verify.ReasonEventTypeInvalid},
		{"not an object", `[{"job_id":"j"}]`, "", "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "sume", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.headerID != "" {
				h.Set("X-Sume-Event-Id", tt.headerID)
			}
			d, err := p.Identify(h, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.key || d.EventType != tt.typ {
				t.Fatalf("Identify = (%q, %q), want (%q, %q)", d.ExternalID, d.EventType, tt.key, tt.typ)
			}
			if string(d.Payload) != tt.body {
				t.Fatalf("Payload = %s, want the body unchanged", d.Payload)
			}
		})
	}
}

func FuzzParseSumeSignature(f *testing.F) {
	for _, s := range []string{"", " ", ",", "v1=" + providertest.FuzzSig, "v1=" + providertest.FuzzSig + ",v1=zz", "v0=ab v1=" + providertest.FuzzSig, "v1=", "v1==", "v1=" + strings.ToUpper(providertest.FuzzSig), "\u00a0v1=" + providertest.FuzzSig, "v1=" + providertest.FuzzSig[:63]} {
		f.Add(s, "1614265330")
	}
	f.Fuzz(func(t *testing.T, header, ts string) {
		sigs, err := sume.ParseSumeSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, sigs)
		}
		// A header holding one well-formed v1 entry among separators is accepted.
		if i := strings.Index(header, "v1="); i >= 0 && (i == 0 || strings.ContainsRune(", \t", rune(header[i-1]))) {
			v := header[i+3:]
			if end := strings.IndexAny(v, ", \t\n\r\v\f"); end >= 0 {
				v = v[:end]
			}
			if b, decErr := hex.DecodeString(v); decErr == nil && len(b) == 32 && err != nil {
				t.Fatalf("rejected %q (%v) although it holds v1=%s", header, err, v)
			}
		}
		providertest.VerifyAll(t, providertest.Headers("X-Sume-Signature", header, "X-Sume-Timestamp", ts), []byte(`{}`))
	})
}

func FuzzSumeIdentify(f *testing.F) {
	for _, s := range []struct{ body, header string }{
		{`{"event":"job.completed","job_id":"j"}`, ""},
		{`{"event":"job.completed","job_id":12,"id":"e"}`, "e"},
		{`{"type":"x","id":"e"}`, "f"},
		{`{"type":"x","id":null}`, "h"},
		{`{"type":"x","payload":{"request_id":"r"}}`, ""},
		{`{"type":"x","request_id":"r","job_id":null}`, "r"},
		{`{"type":"x","id":"` + strings.Repeat("a", 255) + `"}`, ""},
		{`{"type":"x","id":" "}`, ""},
		{`{"type":"x","id":1e2}`, ""},
		{`{"type":"x","id":-0}`, "-0"},
		{`{"event":"\u0085","id":"e"}`, ""},
	} {
		f.Add([]byte(s.body), s.header)
	}
	p := providertest.MustProvider(f, "sume", "identify-only-secret-0123")
	f.Fuzz(func(t *testing.T, body []byte, headerID string) {
		h := http.Header{}
		if headerID != "" {
			h.Set("X-Sume-Event-Id", headerID)
		}
		d, err := p.Identify(h, body)
		providertest.CheckFuzzReject(t, err, http.StatusBadRequest, providertest.IdentifyReasons)
		if err != nil {
			return
		}
		providertest.CheckText(t, "key", d.ExternalID)
		providertest.CheckText(t, "event type", d.EventType)
		if !bytes.Equal(d.Payload, body) {
			t.Fatal("payload differs from the body")
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		// An accepted header id never contradicts the signed body id.
		if id, ok := top["id"]; ok && headerID != "" && string(id) != "null" {
			var s string
			if json.Unmarshal(id, &s) != nil {
				s = string(id)
			}
			if s != headerID {
				t.Fatalf("accepted header id %q with body id %s", headerID, id)
			}
		}
		// The key is taken from the signed body whenever the body has one.
		for _, name := range []string{"job_id", "request_id", "id"} {
			if raw, ok := top[name]; ok && string(raw) != "null" {
				var s string
				if json.Unmarshal(raw, &s) != nil {
					s = string(raw)
				}
				if s != d.ExternalID {
					t.Fatalf("key %q, but the body's %s is %s", d.ExternalID, name, raw)
				}
				return
			}
		}
		if d.ExternalID != headerID {
			t.Fatalf("key %q came from neither the body nor the header", d.ExternalID)
		}
	})
}

// benchBody is a ~2 KiB Sume job webhook.
var benchBody = `{"event":"job.completed","job_id":"job_01HZX3","status":"COMPLETED","data":{"notes":"` +
	strings.Repeat("x", 2000) + `"}}`

func BenchmarkSumeVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	p := providertest.MustProvider(b, "sume", "previous-secret", "current-secret")
	h := providertest.SumeHeaders("current-secret", now.Unix(), benchBody)
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Verify(h, body, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSumeIdentify(b *testing.B) {
	p := providertest.MustProvider(b, "sume", "secret")
	h := providertest.Headers("X-Sume-Event-Id", "evt_1")
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Identify(h, body); err != nil {
			b.Fatal(err)
		}
	}
}
