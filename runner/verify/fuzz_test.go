package verify

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The fuzz targets check that no input panics, that every error is a
// *RejectError with the right status and a known reason, and that whatever is
// accepted keeps its invariants.

var (
	verifyReasons = map[string]bool{
		ReasonSignatureMissing: true, ReasonSignatureMalformed: true, ReasonSignatureMismatch: true,
		ReasonTimestampMissing: true, ReasonTimestampMalformed: true, ReasonTimestampOutOfTolerance: true,
	}
	identifyReasons = map[string]bool{
		ReasonBodyNotJSON: true, ReasonKeyMissing: true, ReasonKeyInvalid: true,
		ReasonEventIDMismatch: true, ReasonEventTypeMissing: true, ReasonEventTypeInvalid: true,
	}
)

// checkFuzzReject fails unless err is nil or a *RejectError with status and a reason of reasons.
func checkFuzzReject(t *testing.T, err error, status int, reasons map[string]bool) {
	t.Helper()
	if err == nil {
		return
	}
	var re *RejectError
	if !errors.As(err, &re) || re.Status != status || !reasons[re.Reason] {
		t.Fatalf("unexpected error %#v", err)
	}
}

// checkSigs fails unless sigs is a non-empty list of SHA-256 sized signatures.
func checkSigs(t *testing.T, sigs [][]byte) {
	t.Helper()
	if len(sigs) == 0 {
		t.Fatal("accepted a header with no signature")
	}
	for _, s := range sigs {
		if len(s) != 32 {
			t.Fatalf("accepted a %d-byte signature", len(s))
		}
	}
}

// checkText fails unless s is storable as an external_id or event_type.
func checkText(t *testing.T, what, s string) {
	t.Helper()
	if s == "" || len(s) > 255 || !utf8.ValidString(s) || strings.TrimSpace(s) == "" || strings.ContainsRune(s, 0) {
		t.Fatalf("accepted %s %q", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			t.Fatalf("accepted %s %q with a control character", what, s)
		}
	}
}

// verifyAll runs every kind's Verify on h and body; none may panic or return
// anything but a 401 rejection.
func verifyAll(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	for _, kind := range Kinds() {
		p, err := New(kind, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
		if err != nil {
			t.Fatal(err)
		}
		checkFuzzReject(t, p.Verify(h, body, time.Unix(1614265330, 0)), http.StatusUnauthorized, verifyReasons)
	}
}

const fuzzSig = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

func FuzzParseSumeSignature(f *testing.F) {
	for _, s := range []string{"", " ", ",", "v1=" + fuzzSig, "v1=" + fuzzSig + ",v1=zz", "v0=ab v1=" + fuzzSig, "v1=", "v1==", "v1=" + strings.ToUpper(fuzzSig), "\u00a0v1=" + fuzzSig, "v1=" + fuzzSig[:63]} {
		f.Add(s, "1614265330")
	}
	f.Fuzz(func(t *testing.T, header, ts string) {
		sigs, err := parseSumeSignature(header)
		checkFuzzReject(t, err, http.StatusUnauthorized, verifyReasons)
		if err == nil {
			checkSigs(t, sigs)
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
		verifyAll(t, headers("X-Sume-Signature", header, "X-Sume-Timestamp", ts), []byte(`{}`))
	})
}

func FuzzParseStripeSignature(f *testing.F) {
	for _, s := range []string{"", "t=1614265330,v1=" + fuzzSig, "t=1,t=2,v1=" + fuzzSig, "v1=" + fuzzSig, "t=,v1=" + fuzzSig, "t=1614265330,v0=" + fuzzSig, "t=1614265330, v1=" + fuzzSig + ",v1=", "=,=,=", "t=99999999999999999999,v1=" + fuzzSig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := parseStripeSignature(header)
		checkFuzzReject(t, err, http.StatusUnauthorized, verifyReasons)
		if err == nil {
			checkSigs(t, sigs)
			if ts == "" {
				t.Fatal("accepted a header without t")
			}
		}
		verifyAll(t, headers("Stripe-Signature", header), []byte(`{}`))
	})
}

func FuzzParseStandardSignatures(f *testing.F) {
	for _, s := range []string{"", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1a,abc v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1,", "v1,,", ",", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "v2,x v1,y"} {
		f.Add(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330")
	}
	f.Fuzz(func(t *testing.T, header, id, ts string) {
		sigs, err := parseStandardSignatures(header)
		checkFuzzReject(t, err, http.StatusUnauthorized, verifyReasons)
		if err == nil {
			checkSigs(t, sigs)
		}
		verifyAll(t, headers("webhook-signature", header, "webhook-id", id, "webhook-timestamp", ts), []byte(`{"test": 2432232314}`))
	})
}

func FuzzParseGitHubSignature(f *testing.F) {
	for _, s := range []string{"", "sha256=" + fuzzSig, "sha256=", "sha1=" + fuzzSig, " sha256=" + fuzzSig + " ", "sha256=" + fuzzSig + "00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := parseGitHubSignature(header)
		checkFuzzReject(t, err, http.StatusUnauthorized, verifyReasons)
		if err == nil {
			checkSigs(t, [][]byte{sig})
		}
		verifyAll(t, headers("X-Hub-Signature-256", header), []byte("Hello, World!"))
	})
}

func FuzzParseShopifySignature(f *testing.F) {
	for _, s := range []string{"", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "====", "AAAA", " g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := parseShopifySignature(header)
		checkFuzzReject(t, err, http.StatusUnauthorized, verifyReasons)
		if err == nil {
			checkSigs(t, [][]byte{sig})
		}
		verifyAll(t, headers("X-Shopify-Hmac-Sha256", header), []byte(`{}`))
	})
}

// FuzzSignedRoundTrip signs arbitrary bodies and timestamps for Sume and
// Stripe: a fresh delivery signed with the secret verifies, one whose body
// changed does not.
func FuzzSignedRoundTrip(f *testing.F) {
	f.Add("secret", []byte(`{"job_id":"j"}`), int64(0))
	f.Add("s", []byte(""), int64(299))
	f.Add("whsec_x", []byte("\x00\xff"), int64(-301))
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, secret string, body []byte, offset int64) {
		if secret == "" {
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
			p := mustProvider(t, kind, "other-secret", secret)
			err := p.Verify(h, body, now)
			if fresh && err != nil {
				t.Fatalf("%s: fresh signed delivery rejected: %v", kind, err)
			}
			if !fresh {
				checkReject(t, err, http.StatusUnauthorized, ReasonTimestampOutOfTolerance)
			}
			tampered := append(bytes.Clone(body), ' ')
			checkReject(t, p.Verify(h, tampered, now), http.StatusUnauthorized, ReasonSignatureMismatch)
		}
	})
}

func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a":[1,{"b":null}]} `, `[]`, `null`, ``, `{"a":"\u0000"}`, `{"a":"\\u0000"}`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":1}{}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"\ud800\udc00":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := ReadEnvelope(body)
		if err != nil {
			checkReject(t, err, http.StatusBadRequest, ReasonBodyNotJSON)
			// Anything encoding/json takes as an object, in valid UTF-8 and
			// without \u escapes (where jsonb is stricter), must be accepted.
			var m map[string]any
			if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u`)) && json.Unmarshal(body, &m) == nil && m != nil {
				t.Fatalf("rejected %q which is a JSON object", body)
			}
			return
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Fatalf("accepted %q which is not valid UTF-8 JSON", body)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil || m == nil {
			t.Fatalf("accepted %q which is not a JSON object: %v", body, err)
		}
		if len(m) != len(env) {
			t.Fatalf("Envelope has %d members, encoding/json finds %d", len(env), len(m))
		}
		for name, raw := range env {
			if !json.Valid(raw) || !bytes.Equal(bytes.TrimSpace(m[name]), bytes.TrimSpace(raw)) {
				t.Fatalf("member %q = %q, encoding/json finds %q", name, raw, m[name])
			}
		}
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
	p := mustProvider(f, "sume", "secret")
	f.Fuzz(func(t *testing.T, body []byte, headerID string) {
		h := http.Header{}
		if headerID != "" {
			h.Set("X-Sume-Event-Id", headerID)
		}
		d, err := p.Identify(h, body)
		checkFuzzReject(t, err, http.StatusBadRequest, identifyReasons)
		if err != nil {
			return
		}
		checkText(t, "key", d.ExternalID)
		checkText(t, "event type", d.EventType)
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
