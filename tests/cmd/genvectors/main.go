// Command genvectors writes the signature test vectors that
// tests/verify_vectors_test.go runs through both the Go verifier (package
// runner) and the SQL one (webhooks.ingest_signed):
//
//	go run ./tests/cmd/genvectors -o tests/testdata/signature_vectors.json
//
// Every signature is computed here with crypto/hmac from each provider's
// published recipe, independently of the code under test, at fixed times and
// with fixed secrets, so the output is byte-for-byte the same on every run.
// The published vectors (Standard Webhooks specification, GitHub
// documentation) are copied verbatim.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// vector is one case of signature_vectors.json; tests/verify_vectors_test.go
// reads the same fields.
type vector struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Secrets []string       `json:"secrets"`
	Headers map[string]any `json:"headers"` // name -> string, or []string for a repeated header
	Body    string         `json:"body"`
	// BodyBase64, when set, is the body instead of Body: for bodies that are
	// not valid UTF-8 and so cannot be a JSON string.
	BodyBase64 string `json:"body_base64,omitempty"`
	At         int64  `json:"at"` // unix seconds: the verifier's clock
	Want       want   `json:"want"`
	// GoDiffers, when set, explains why the Go verifier is known to give
	// another answer than Want (the documented one); the test reports it
	// instead of failing.
	GoDiffers string `json:"go_differs,omitempty"`
}

// want is the expected verdict: a rejection (Status, Reason) or an accepted
// delivery (ExternalID, EventType).
type want struct {
	Status     int    `json:"status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ExternalID string `json:"external_id,omitempty"`
	EventType  string `json:"event_type,omitempty"`
}

func ok(id, typ string) want          { return want{ExternalID: id, EventType: typ} }
func unauthorized(reason string) want { return want{Status: 401, Reason: reason} }
func badRequest(reason string) want   { return want{Status: 400, Reason: reason} }

// t0 is the clock of every vector that does not say otherwise.
const t0 int64 = 1_700_000_000

func macHex(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func macBase64(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func ts(n int64) string { return strconv.FormatInt(n, 10) }

// hdr builds a header map from name/value pairs; a value may be a string or a []string.
func hdr(kv ...any) map[string]any {
	h := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i].(string)] = kv[i+1]
	}
	return h
}

// with returns a copy of h with name set to value, or removed when value is nil.
func with(h map[string]any, name string, value any) map[string]any {
	out := map[string]any{}
	for k, v := range h {
		out[k] = v
	}
	if value == nil {
		delete(out, name)
	} else {
		out[name] = value
	}
	return out
}

func main() {
	out := flag.String("o", "", "write to this file instead of standard output")
	flag.Parse()
	var vs []vector
	vs = append(vs, sumeVectors()...)
	vs = append(vs, stripeVectors()...)
	vs = append(vs, githubVectors()...)
	vs = append(vs, standardWebhooksVectors()...)
	vs = append(vs, shopifyVectors()...)
	vs = append(vs, boundsVectors()...)

	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.Name] {
			fmt.Fprintf(os.Stderr, "genvectors: duplicate vector name %q\n", v.Name)
			os.Exit(1)
		}
		seen[v.Name] = true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(vs); err != nil {
		fmt.Fprintln(os.Stderr, "genvectors:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(buf.Bytes())
		return
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genvectors:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "genvectors: wrote %d vectors to %s\n", len(vs), *out)
}

func sumeVectors() []vector {
	const secret = "sume_vector_secret_current_4f1c"
	const oldSecret = "sume_vector_secret_previous_9a2e"
	const wrong = "sume_vector_secret_wrong_77d0"
	sign := func(key string, at int64, body string) map[string]any {
		return hdr("X-Sume-Timestamp", ts(at), "X-Sume-Signature", "v1="+macHex([]byte(key), ts(at)+"."+body))
	}
	body := `{"event":"job.completed","job_id":"job_123","data":{"status":"COMPLETED"}}`
	good := sign(secret, t0, body)
	sig := good["X-Sume-Signature"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "sume/" + name, Kind: "sume", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	vs := []vector{
		v("valid", one, good, body, ok("job_123", "job.completed")),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, ok("job_123", "job.completed")),
		v("valid with the first of two secrets", []string{secret, oldSecret}, good, body, ok("job_123", "job.completed")),
		v("wrong secret", one, sign(wrong, t0, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "job_123", "job_124", 1), unauthorized("signature mismatch")),
		v("re-serialised body", one, good, strings.ReplaceAll(body, ":", ": "), unauthorized("signature mismatch")),
		v("timestamp changed after signing", one, with(good, "X-Sume-Timestamp", ts(t0+1)), body, unauthorized("signature mismatch")),
		v("signature over the body only", one, with(good, "X-Sume-Signature", "v1="+macHex([]byte(secret), body)), body, unauthorized("signature mismatch")),
		v("missing signature header", one, with(good, "X-Sume-Signature", nil), body, unauthorized("signature missing")),
		v("blank signature header", one, with(good, "X-Sume-Signature", " , "), body, unauthorized("signature missing")),
		v("missing timestamp header", one, with(good, "X-Sume-Timestamp", nil), body, unauthorized("timestamp missing")),
		v("malformed signature: not hex", one, with(good, "X-Sume-Signature", "v1=zz"), body, unauthorized("signature malformed")),
		v("malformed signature: no scheme", one, with(good, "X-Sume-Signature", sig[3:]), body, unauthorized("signature malformed")),
		v("malformed signature: short", one, with(good, "X-Sume-Signature", sig[:len(sig)-2]), body, unauthorized("signature malformed")),
		v("malformed signature: only other schemes", one, with(good, "X-Sume-Signature", "v0="+sig[3:]+" sha256="+sig[3:]), body, unauthorized("signature malformed")),
		v("malformed timestamp: letters", one, with(good, "X-Sume-Timestamp", "yesterday"), body, unauthorized("timestamp malformed")),
		v("malformed timestamp: sign", one, with(good, "X-Sume-Timestamp", "+"+ts(t0)), body, unauthorized("timestamp malformed")),
		v("malformed timestamp: fraction", one, with(good, "X-Sume-Timestamp", ts(t0)+".5"), body, unauthorized("timestamp malformed")),
		v("malformed timestamp: overflow", one, with(good, "X-Sume-Timestamp", strings.Repeat("9", 30)), body, unauthorized("timestamp malformed")),
		v("stale timestamp (-6 min)", one, sign(secret, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(secret, t0+360, body), body, unauthorized("timestamp out of tolerance")),
		v("just within tolerance (-5 min)", one, sign(secret, t0-300, body), body, ok("job_123", "job.completed")),
		v("just within tolerance (+5 min)", one, sign(secret, t0+300, body), body, ok("job_123", "job.completed")),
		v("just out of tolerance (-5 min 1 s)", one, sign(secret, t0-301, body), body, unauthorized("timestamp out of tolerance")),
		v("just out of tolerance (+5 min 1 s)", one, sign(secret, t0+301, body), body, unauthorized("timestamp out of tolerance")),
		v("stale and wrong secret", one, sign(wrong, t0-3600, body), body, unauthorized("signature mismatch")),
		v("several entries, comma separated", one, with(good, "X-Sume-Signature", "v1="+strings.Repeat("00", 32)+","+sig), body, ok("job_123", "job.completed")),
		v("several entries, space separated", one, with(good, "X-Sume-Signature", sig+" v1="+strings.Repeat("ab", 32)), body, ok("job_123", "job.completed")),
		v("unknown schemes and a bad v1 ignored", one, with(good, "X-Sume-Signature", "v2=abc, v1=zz, t=1 ,"+sig), body, ok("job_123", "job.completed")),
		v("entries separated by a no-break space", one, with(good, "X-Sume-Signature", "v1="+strings.Repeat("00", 32)+"\u00a0"+sig), body, ok("job_123", "job.completed")),
		v("upper-case hex", one, with(good, "X-Sume-Signature", "v1="+strings.ToUpper(sig[3:])), body, ok("job_123", "job.completed")),
		v("lower-case header names", one, hdr("x-sume-timestamp", ts(t0), "x-sume-signature", sig), body, ok("job_123", "job.completed")),
		v("upper-case header names", one, hdr("X-SUME-TIMESTAMP", ts(t0), "X-SUME-SIGNATURE", sig), body, ok("job_123", "job.completed")),
		v("header sent twice, valid first", one, with(good, "X-Sume-Signature", []string{sig, "v1=" + strings.Repeat("00", 32)}), body, ok("job_123", "job.completed")),
		v("header sent twice, valid second: only the first counts", one, with(good, "X-Sume-Signature", []string{"v1=" + strings.Repeat("00", 32), sig}), body, unauthorized("signature mismatch")),
		v("header sent as an empty list", one, with(good, "X-Sume-Signature", []string{}), body, unauthorized("signature missing")),
		v("empty body signed", one, sign(secret, t0, ""), "", badRequest("body not json")),
	}

	// Key and event type rules: every body below is correctly signed.
	key := func(name, body, headerID string, w want) vector {
		h := sign(secret, t0, body)
		if headerID != "" {
			h["X-Sume-Event-Id"] = headerID
		}
		return v(name, one, h, body, w)
	}
	deep := func(n int) string {
		return `{"event":"x","id":"e","a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	vs = append(vs,
		key("key: job_id wins over request_id and id", `{"event":"job.completed","id":"evt_9","request_id":"req_1","job_id":"job_1"}`, "", ok("job_1", "job.completed")),
		key("key: job_id wins over the header", `{"event":"job.failed","job_id":"job_1"}`, "evt_9", ok("job_1", "job.failed")),
		key("key: format run keyed on the envelope request_id", `{"event":"format.completed","request_id":"req_1","payload":{"request_id":"req_nested"}}`, "", ok("req_1", "format.completed")),
		key("key: request_id wins over id", `{"event":"format.completed","request_id":"req_1","id":"evt_1"}`, "evt_1", ok("req_1", "format.completed")),
		key("key: request_id not compared with the header", `{"event":"format.completed","request_id":"req_1"}`, "evt_other", ok("req_1", "format.completed")),
		key("key: payload.request_id ignored", `{"event":"format.completed","payload":{"request_id":"req_nested"}}`, "", badRequest("idempotency key missing")),
		key("key: nested job_id ignored, id used", `{"type":"file.created","id":"evt_1","data":{"job_id":"job_nested"}}`, "", ok("evt_1", "file.created")),
		key("key: resource event keyed on id", `{"type":"file.created","id":"evt_1"}`, "", ok("evt_1", "file.created")),
		key("key: header equal to id", `{"type":"file.created","id":"evt_1"}`, "evt_1", ok("evt_1", "file.created")),
		key("key: header differs from id", `{"type":"file.created","id":"evt_1"}`, "evt_2", badRequest("event id mismatch")),
		key("key: header differs from id only in case", `{"type":"file.created","id":"evt_1"}`, "EVT_1", badRequest("event id mismatch")),
		key("key: header equal to integer id", `{"type":"file.created","id":17}`, "17", ok("17", "file.created")),
		key("key: header differs from integer id", `{"type":"file.created","id":17}`, "18", badRequest("event id mismatch")),
		key("key: job webhook with id equal to the header", `{"event":"job.completed","job_id":"job_1","id":"evt_1"}`, "evt_1", ok("job_1", "job.completed")),
		key("key: job webhook with id differing from the header", `{"event":"job.completed","job_id":"job_1","id":"evt_1"}`, "evt_2", badRequest("event id mismatch")),
		key("key: job webhook with an object id and the header", `{"event":"job.completed","job_id":"job_1","id":{"v":"evt_1"}}`, "evt_1", badRequest("event id mismatch")),
		key("key: job webhook with an object id, no header", `{"event":"job.completed","job_id":"job_1","id":{"v":"evt_1"}}`, "", ok("job_1", "job.completed")),
		key("key: header used when the body has no key", `{"type":"ping"}`, "evt_h", ok("evt_h", "ping")),
		key("key: header used when id is null", `{"type":"ping","id":null}`, "evt_h", ok("evt_h", "ping")),
		key("key: none at all", `{"type":"ping"}`, "", badRequest("idempotency key missing")),
		key("key: null job_id falls through to request_id", `{"event":"format.completed","job_id":null,"request_id":"req_1"}`, "", ok("req_1", "format.completed")),
		key("key: integer job_id keeps its digits", `{"event":"job.completed","job_id":9007199254740993}`, "", ok("9007199254740993", "job.completed")),
		key("key: negative zero id keeps its digits", `{"type":"x","id":-0}`, "", ok("-0", "x")),
		key("key: integer with exponent is invalid", `{"type":"x","id":1e3}`, "", badRequest("idempotency key invalid")),
		key("key: integral fraction is invalid", `{"type":"x","id":1.0}`, "", badRequest("idempotency key invalid")),
		key("key: boolean id is invalid", `{"type":"x","id":true}`, "", badRequest("idempotency key invalid")),
		key("key: array request_id is invalid", `{"event":"format.completed","request_id":["r"]}`, "", badRequest("idempotency key invalid")),
		key("key: empty job_id is invalid", `{"event":"job.completed","job_id":""}`, "", badRequest("idempotency key invalid")),
		key("key: blank id is invalid", `{"type":"x","id":"\u00a0 \u3000"}`, "", badRequest("idempotency key invalid")),
		key("key: id with a control character is invalid", `{"type":"x","id":"a\u0007b"}`, "", badRequest("idempotency key invalid")),
		key("key: id with a C1 control character is invalid", `{"type":"x","id":"a\u0085b"}`, "", badRequest("idempotency key invalid")),
		key("key: id of 255 bytes", `{"type":"x","id":"`+strings.Repeat("i", 253)+`é"}`, "", ok(strings.Repeat("i", 253)+"é", "x")),
		key("key: id over 255 bytes is invalid", `{"type":"x","id":"`+strings.Repeat("i", 254)+`é"}`, "", badRequest("idempotency key invalid")),
		key("key: header over 255 bytes is invalid", `{"type":"x"}`, strings.Repeat("h", 256), badRequest("idempotency key invalid")),
		key("key: header with a control character is invalid", `{"type":"x"}`, "evt\x01", badRequest("idempotency key invalid")),
		key("key: name given twice keeps the last value", `{"type":"x","id":"evt_first","id":"evt_last"}`, "", ok("evt_last", "x")),
		key("key: escaped member name", `{"event":"job.completed","job\u005fid":"job_esc"}`, "", ok("job_esc", "job.completed")),
		key("key: escaped characters in the key", `{"type":"x","id":"a\u00e9\/b"}`, "", ok("aé/b", "x")),
		key("type: event wins over type", `{"event":"job.completed","type":"job","job_id":"j"}`, "", ok("j", "job.completed")),
		key("type: type when event is empty", `{"event":"","type":"file.created","id":"e"}`, "", ok("e", "file.created")),
		key("type: type when event is not a string", `{"event":{"name":"x"},"type":"file.created","id":"e"}`, "", ok("e", "file.created")),
		key("type: missing", `{"job_id":"j"}`, "", badRequest("event type missing")),
		key("type: not a string", `{"job_id":"j","type":7}`, "", badRequest("event type missing")),
		key("type: nested only", `{"job_id":"j","data":{"event":"x"}}`, "", badRequest("event type missing")),
		key("type: blank", `{"job_id":"j","event":"  "}`, "", badRequest("event type invalid")),
		key("type: too long", `{"job_id":"j","event":"`+strings.Repeat("e", 256)+`"}`, "", badRequest("event type invalid")),
		key("type: with a newline", `{"job_id":"j","event":"a\nb"}`, "", badRequest("event type invalid")),
		key("body: not json (form-encoded)", `event=job.completed&job_id=j`, "", badRequest("body not json")),
		key("body: an array", `[{"event":"x","job_id":"j"}]`, "", badRequest("body not json")),
		key("body: trailing data", `{"event":"x","job_id":"j"} {}`, "", badRequest("body not json")),
		key("body: trailing comma", `{"event":"x","job_id":"j",}`, "", badRequest("body not json")),
		key("body: byte order mark", "\ufeff"+`{"event":"x","job_id":"j"}`, "", badRequest("body not json")),
		key("body: u0000 escape", `{"event":"x","job_id":"j\u0000"}`, "", badRequest("body not json")),
		key("body: unpaired surrogate escape", `{"event":"x","job_id":"j\ud800"}`, "", badRequest("body not json")),
		key("body: surrounding whitespace", " \n\t"+`{"event":"x","job_id":"j"}`+"\r\n ", "", ok("j", "x")),
		key("body: nested 64 levels", deep(63), "", ok("e", "x")),
		key("body: nested 65 levels", deep(64), "", badRequest("body nested too deep")),
		key("body: an array nested 65 levels", strings.Repeat("[", 65)+strings.Repeat("]", 65), "", badRequest("body nested too deep")),
		key("body: nested 65 levels inside a string does not count", `{"event":"x","id":"e","a":"`+strings.Repeat("[", 65)+`"}`, "", ok("e", "x")),
		key("body: nested 10000 levels", deep(9999), "", badRequest("body nested too deep")),
		key("body: nested 10001 levels", deep(10000), "", badRequest("body not json")),
	)

	// A body that is not valid UTF-8 cannot be a JSON string: it travels as base64.
	raw := "{\"event\":\"x\",\"job_id\":\"j\xff\"}"
	utf := v("body: invalid UTF-8", one, sign(secret, t0, raw), "", badRequest("body not json"))
	utf.BodyBase64 = base64.StdEncoding.EncodeToString([]byte(raw))
	vs = append(vs, utf)

	vs = append(vs, key("body: number beyond numeric", `{"event":"x","job_id":"j","n":1e200000}`, "", badRequest("body not json")))
	return vs
}

func stripeVectors() []vector {
	const secret = "whsec_stripe_vector_current_5b7d"
	const oldSecret = "whsec_stripe_vector_previous_c3a1"
	const wrong = "whsec_stripe_vector_wrong_0e94"
	sign := func(key string, at int64, body string) map[string]any {
		return hdr("Stripe-Signature", "t="+ts(at)+",v1="+macHex([]byte(key), ts(at)+"."+body))
	}
	raw := func(s string) map[string]any { return hdr("Stripe-Signature", s) }
	body := `{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}`
	v1 := macHex([]byte(secret), ts(t0)+"."+body)
	tS := ts(t0)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "stripe/" + name, Kind: "stripe", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok("evt_1", "payment_intent.succeeded")
	vs := []vector{
		v("valid", one, sign(secret, t0, body), body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, sign(secret, t0, body), body, valid),
		v("wrong secret", one, sign(wrong, t0, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, sign(secret, t0, body), strings.Replace(body, "evt_1", "evt_2", 1), unauthorized("signature mismatch")),
		v("re-serialised body", one, sign(secret, t0, body), strings.ReplaceAll(body, ",", ", "), unauthorized("signature mismatch")),
		v("several v1, one matching", one, raw("t="+tS+",v1="+strings.Repeat("0", 64)+",v1="+v1), body, valid),
		v("v0 ignored", one, raw("t="+tS+",v1="+v1+",v0="+macHex([]byte(secret), body)), body, valid),
		v("spaces around items", one, raw("t="+tS+", v1="+v1+" "), body, valid),
		v("order does not matter", one, raw("v1="+v1+",t="+tS), body, valid),
		v("t repeated with the same value", one, raw("t="+tS+",v1="+v1+",t="+tS), body, valid),
		v("lower-case header name", one, hdr("stripe-signature", "t="+tS+",v1="+v1), body, valid),
		v("missing header", one, hdr(), body, unauthorized("signature missing")),
		v("blank header", one, raw("  "), body, unauthorized("signature missing")),
		v("malformed: garbage", one, raw("garbage"), body, unauthorized("signature malformed")),
		v("malformed: only v0", one, raw("t="+tS+",v0="+v1), body, unauthorized("signature malformed")),
		v("malformed: v1 not hex", one, raw("t="+tS+",v1=xyz"), body, unauthorized("signature malformed")),
		v("malformed: upper-case scheme", one, raw("t="+tS+",V1="+v1), body, unauthorized("signature malformed")),
		v("timestamp missing", one, raw("v1="+v1), body, unauthorized("timestamp missing")),
		v("timestamp empty", one, raw("t=,v1="+v1), body, unauthorized("timestamp malformed")),
		v("timestamp malformed", one, raw("t=now,v1="+v1), body, unauthorized("timestamp malformed")),
		v("timestamp negative", one, raw("t=-1,v1="+v1), body, unauthorized("timestamp malformed")),
		v("timestamp with a space after =", one, raw("t= "+tS+",v1="+v1), body, unauthorized("timestamp malformed")),
		v("two different timestamps", one, raw("t="+tS+",t=1,v1="+v1), body, unauthorized("timestamp malformed")),
		v("two different timestamps and no v1", one, raw("t="+tS+",t=1"), body, unauthorized("timestamp malformed")),
		v("timestamp changed after signing", one, raw("t="+ts(t0-1)+",v1="+v1), body, unauthorized("signature mismatch")),
		v("stale timestamp (-6 min)", one, sign(secret, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(secret, t0+360, body), body, unauthorized("timestamp out of tolerance")),
		v("within tolerance (-5 min)", one, sign(secret, t0-300, body), body, valid),
		v("within tolerance (+5 min)", one, sign(secret, t0+300, body), body, valid),
	}
	key := func(name, body string, w want) vector { return v(name, one, sign(secret, t0, body), body, w) }
	vs = append(vs,
		key("key: event", `{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`, ok("evt_1", "invoice.paid")),
		key("key: nested id ignored", `{"type":"invoice.paid","data":{"object":{"id":"in_1"}}}`, badRequest("idempotency key missing")),
		key("key: null id", `{"id":null,"type":"invoice.paid"}`, badRequest("idempotency key missing")),
		key("key: empty id", `{"id":"","type":"invoice.paid"}`, badRequest("idempotency key invalid")),
		key("key: object id", `{"id":{},"type":"invoice.paid"}`, badRequest("idempotency key invalid")),
		key("key: integer id", `{"id":12345678901234567890123,"type":"invoice.paid"}`, ok("12345678901234567890123", "invoice.paid")),
		key("type: missing", `{"id":"evt_1"}`, badRequest("event type missing")),
		key("type: not a string", `{"id":"evt_1","type":["a"]}`, badRequest("event type missing")),
		key("type: with a control character", `{"id":"evt_1","type":"a\u001fb"}`, badRequest("event type invalid")),
		key("body: not json", `id=evt_1&type=invoice.paid`, badRequest("body not json")),
	)
	return vs
}

func githubVectors() []vector {
	const secret = "gh_vector_secret_current_2d8f"
	const oldSecret = "gh_vector_secret_previous_61b0"
	const wrong = "gh_vector_secret_wrong_a5c7"
	const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	body := `{"action":"opened","issue":{"number":1}}`
	sign := func(key, body string) map[string]any {
		return hdr("X-Hub-Signature-256", "sha256="+macHex([]byte(key), body),
			"X-GitHub-Delivery", delivery, "X-GitHub-Event", "issues")
	}
	good := sign(secret, body)
	sig := macHex([]byte(secret), body)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "github/" + name, Kind: "github", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok(delivery, "issues.opened")
	const docsSecret = "It's a Secret to Everybody"
	docs := hdr("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"X-GitHub-Delivery", "docs-1", "X-GitHub-Event", "ping")
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, valid),
		v("wrong secret", one, sign(wrong, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "1", "2", 1), unauthorized("signature mismatch")),
		v("missing signature header", one, with(good, "X-Hub-Signature-256", nil), body, unauthorized("signature missing")),
		v("legacy sha1 header only", one, with(with(good, "X-Hub-Signature-256", nil), "X-Hub-Signature", "sha1=0123"), body, unauthorized("signature missing")),
		v("malformed: no prefix", one, with(good, "X-Hub-Signature-256", sig), body, unauthorized("signature malformed")),
		v("malformed: sha1 prefix", one, with(good, "X-Hub-Signature-256", "sha1="+sig), body, unauthorized("signature malformed")),
		v("malformed: upper-case prefix", one, with(good, "X-Hub-Signature-256", "SHA256="+sig), body, unauthorized("signature malformed")),
		v("malformed: not hex", one, with(good, "X-Hub-Signature-256", "sha256="+strings.Repeat("g", 64)), body, unauthorized("signature malformed")),
		v("malformed: short", one, with(good, "X-Hub-Signature-256", "sha256="+sig[:62]), body, unauthorized("signature malformed")),
		v("malformed: space inside", one, with(good, "X-Hub-Signature-256", "sha256="+sig[:32]+" "+sig[32:]), body, unauthorized("signature malformed")),
		v("malformed: two signatures", one, with(good, "X-Hub-Signature-256", "sha256="+sig+",sha256="+sig), body, unauthorized("signature malformed")),
		v("surrounding spaces trimmed", one, with(good, "X-Hub-Signature-256", "  sha256="+sig+"\t"), body, valid),
		v("upper-case hex", one, with(good, "X-Hub-Signature-256", "sha256="+strings.ToUpper(sig)), body, valid),
		v("without action", one, sign(secret, `{"ref":"refs/heads/main"}`), `{"ref":"refs/heads/main"}`, ok(delivery, "issues")),
		v("empty action", one, sign(secret, `{"action":""}`), `{"action":""}`, ok(delivery, "issues")),
		v("non-string action", one, sign(secret, `{"action":{"x":1}}`), `{"action":{"x":1}}`, ok(delivery, "issues")),
		v("nested action ignored", one, sign(secret, `{"data":{"action":"x"}}`), `{"data":{"action":"x"}}`, ok(delivery, "issues")),
		v("delivery missing", one, with(good, "X-GitHub-Delivery", nil), body, badRequest("idempotency key missing")),
		v("delivery empty", one, with(good, "X-GitHub-Delivery", ""), body, badRequest("idempotency key missing")),
		v("delivery too long", one, with(good, "X-GitHub-Delivery", strings.Repeat("d", 256)), body, badRequest("idempotency key invalid")),
		v("event missing", one, with(good, "X-GitHub-Event", nil), body, badRequest("event type missing")),
		v("event with action too long", one, with(good, "X-GitHub-Event", strings.Repeat("e", 250)), body, badRequest("event type invalid")),
		v("form-encoded body", one, sign(secret, `payload=%7B%7D`), `payload=%7B%7D`, badRequest("body not json")),
		// GitHub's "Validating webhook deliveries" example: valid signature, body not JSON.
		v("docs vector", []string{docsSecret}, docs, "Hello, World!", badRequest("body not json")),
		v("docs vector, tampered", []string{docsSecret}, docs, "Hello, World?", unauthorized("signature mismatch")),
	}
}

func standardWebhooksVectors() []vector {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const oldSecret = "whsec_c2VjcmV0LXByZXZpb3VzLWtleS0xMjM0NTY="
	const unpadded = "whsec_dmVjdG9yLXVucGFkZGVkLWtleQ" // "vector-unpadded-key", base64 without its "=="
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	key := func(s string) []byte {
		s = strings.TrimPrefix(s, "whsec_")
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			k, err = base64.RawStdEncoding.DecodeString(s)
		}
		if err != nil {
			panic(err)
		}
		return k
	}
	sign := func(secret, id string, at int64, body string) map[string]any {
		return hdr("webhook-id", id, "webhook-timestamp", ts(at),
			"webhook-signature", "v1,"+macBase64(key(secret), id+"."+ts(at)+"."+body))
	}
	body := `{"type":"invoice.paid","data":{"id":"in_1"}}`
	good := sign(secret, id, t0, body)
	sig := good["webhook-signature"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "standardwebhooks/" + name, Kind: "standardwebhooks", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok(id, "invoice.paid")
	// The example of the Standard Webhooks specification. Its body has no type.
	const specID, specTS = "msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330)
	spec := hdr("webhook-id", specID, "webhook-timestamp", ts(specTS),
		"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	specBody := `{"test": 2432232314}`
	vs := []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, valid),
		v("valid with an unprefixed secret", []string{strings.TrimPrefix(secret, "whsec_")}, good, body, valid),
		v("valid with an unpadded secret", []string{unpadded}, sign(unpadded, id, t0, body), body, valid),
		v("upper-case header names", one, hdr("Webhook-Id", id, "WEBHOOK-TIMESTAMP", ts(t0), "Webhook-Signature", sig), body, valid),
		v("wrong secret", []string{oldSecret}, good, body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "in_1", "in_2", 1), unauthorized("signature mismatch")),
		v("webhook-id changed after signing", one, with(good, "webhook-id", "msg_other"), body, unauthorized("signature mismatch")),
		v("webhook-id removed after signing", one, with(good, "webhook-id", nil), body, unauthorized("signature mismatch")),
		v("several signatures, one matching", one, with(good, "webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))+" "+sig), body, valid),
		v("other versions ignored", one, with(good, "webhook-signature", "v1a,"+sig[3:]+" v2,abc "+sig), body, valid),
		v("missing signature", one, with(good, "webhook-signature", nil), body, unauthorized("signature missing")),
		v("blank signature", one, with(good, "webhook-signature", " \t "), body, unauthorized("signature missing")),
		v("missing timestamp", one, with(good, "webhook-timestamp", nil), body, unauthorized("timestamp missing")),
		v("malformed: comma separated", one, with(good, "webhook-signature", sig+","+sig), body, unauthorized("signature malformed")),
		v("malformed: no version", one, with(good, "webhook-signature", sig[3:]), body, unauthorized("signature malformed")),
		v("malformed: only v1a", one, with(good, "webhook-signature", "v1a,"+sig[3:]), body, unauthorized("signature malformed")),
		v("malformed: not base64", one, with(good, "webhook-signature", "v1,!!!"), body, unauthorized("signature malformed")),
		v("malformed: unpadded base64", one, with(good, "webhook-signature", strings.TrimRight(sig, "=")), body, unauthorized("signature malformed")),
		v("malformed timestamp", one, with(good, "webhook-timestamp", "1.7e9"), body, unauthorized("timestamp malformed")),
		v("stale timestamp (-6 min)", one, sign(secret, id, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(secret, id, t0+360, body), body, unauthorized("timestamp out of tolerance")),
		v("within tolerance (-5 min)", one, sign(secret, id, t0-300, body), body, valid),
		v("within tolerance (+5 min)", one, sign(secret, id, t0+300, body), body, valid),
		v("webhook-id missing, signed as empty", one, with(sign(secret, "", t0, body), "webhook-id", nil), body, badRequest("idempotency key missing")),
		v("webhook-id with a control character", one, sign(secret, "msg\x7f", t0, body), body, badRequest("idempotency key invalid")),
		v("type missing", one, sign(secret, id, t0, `{"data":{"type":"x"}}`), `{"data":{"type":"x"}}`, badRequest("event type missing")),
		v("body not json", one, sign(secret, id, t0, `{"type":"x",}`), `{"type":"x",}`, badRequest("body not json")),
	}
	spec1 := v("spec vector", []string{secret}, spec, specBody, badRequest("event type missing"))
	spec1.At = specTS
	spec2 := v("spec vector, 6 minutes later", []string{secret}, spec, specBody, unauthorized("timestamp out of tolerance"))
	spec2.At = specTS + 360
	spec3 := v("spec vector, re-serialised body", []string{secret}, spec, `{"test":2432232314}`, unauthorized("signature mismatch"))
	spec3.At = specTS
	return append(vs, spec1, spec2, spec3)
}

func shopifyVectors() []vector {
	const secret = "shpss_vector_current_8e3b"
	const oldSecret = "shpss_vector_previous_14fa"
	const wrong = "shpss_vector_wrong_d902"
	const eventID = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
	body := `{"id":820982911946154508,"email":"jon@example.com"}`
	sign := func(key, body string) map[string]any {
		return hdr("X-Shopify-Hmac-Sha256", macBase64([]byte(key), body),
			"X-Shopify-Event-Id", eventID, "X-Shopify-Topic", "orders/create")
	}
	good := sign(secret, body)
	sig := good["X-Shopify-Hmac-Sha256"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "shopify/" + name, Kind: "shopify", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok(eventID, "orders/create")
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, valid),
		v("wrong secret", one, sign(wrong, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "jon", "jan", 1), unauthorized("signature mismatch")),
		v("missing header", one, with(good, "X-Shopify-Hmac-Sha256", nil), body, unauthorized("signature missing")),
		v("blank header", one, with(good, "X-Shopify-Hmac-Sha256", "   "), body, unauthorized("signature missing")),
		v("malformed: hex instead of base64", one, with(good, "X-Shopify-Hmac-Sha256", macHex([]byte(secret), body)), body, unauthorized("signature malformed")),
		v("malformed: not base64", one, with(good, "X-Shopify-Hmac-Sha256", "%%%"), body, unauthorized("signature malformed")),
		v("malformed: unpadded", one, with(good, "X-Shopify-Hmac-Sha256", strings.TrimRight(sig, "=")), body, unauthorized("signature malformed")),
		v("malformed: short", one, with(good, "X-Shopify-Hmac-Sha256", "AAAA"), body, unauthorized("signature malformed")),
		v("malformed: space inside", one, with(good, "X-Shopify-Hmac-Sha256", sig[:20]+" "+sig[20:]), body, unauthorized("signature malformed")),
		v("line break inside ignored", one, with(good, "X-Shopify-Hmac-Sha256", sig[:20]+"\r\n"+sig[20:]), body, valid),
		v("surrounding spaces trimmed", one, with(good, "X-Shopify-Hmac-Sha256", " "+sig+" "), body, valid),
		v("event id missing", one, with(good, "X-Shopify-Event-Id", nil), body, badRequest("idempotency key missing")),
		v("event id blank", one, with(good, "X-Shopify-Event-Id", "  "), body, badRequest("idempotency key invalid")),
		v("topic missing", one, with(good, "X-Shopify-Topic", nil), body, badRequest("event type missing")),
		v("body not an object", one, sign(secret, `[1]`), `[1]`, badRequest("body not json")),
	}
}

// boundsVectors: a signature header (its first value) over 4096 bytes, or
// listing more than 8 signatures, is refused before any HMAC (401 "signature
// header too large", "too many signatures"); exactly at the bounds, a valid
// signature is accepted.
func boundsVectors() []vector {
	const secret = "bounds_vector_secret_7c1e"
	zeros := strings.Repeat("0", 64)
	var vs []vector
	v := func(kind, name string, h map[string]any, body string, w want) {
		vs = append(vs, vector{Name: kind + "/bounds: " + name, Kind: kind, Secrets: []string{secret}, Headers: h, Body: body, At: t0, Want: w})
	}
	// pad returns filler of n bytes that is one entry of another scheme.
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("a", n-len(prefix)) }

	sumeBody := `{"event":"job.completed","job_id":"job_b"}`
	sumeSig := "v1=" + macHex([]byte(secret), ts(t0)+"."+sumeBody)
	sume := func(sig string) map[string]any { return hdr("X-Sume-Timestamp", ts(t0), "X-Sume-Signature", sig) }
	sumeOK := ok("job_b", "job.completed")
	v("sume", "8 signatures, the last valid", sume(strings.Repeat("v1="+zeros+",", 7)+sumeSig), sumeBody, sumeOK)
	v("sume", "9 signatures, the last valid", sume(strings.Repeat("v1="+zeros+",", 8)+sumeSig), sumeBody, unauthorized("too many signatures"))
	v("sume", "9 entries of other schemes and one v1", sume(strings.Repeat("v0=x ", 8)+sumeSig), sumeBody, unauthorized("too many signatures"))
	v("sume", "header of 4096 bytes", sume(pad("v9=", 4096-len(sumeSig)-1)+" "+sumeSig), sumeBody, sumeOK)
	v("sume", "header of 4097 bytes", sume(pad("v9=", 4097-len(sumeSig)-1)+" "+sumeSig), sumeBody, unauthorized("signature header too large"))

	stripeBody := `{"id":"evt_b","object":"event","type":"invoice.paid"}`
	stripeSig := "v1=" + macHex([]byte(secret), ts(t0)+"."+stripeBody)
	stripe := func(sig string) map[string]any { return hdr("Stripe-Signature", sig) }
	stripeOK := ok("evt_b", "invoice.paid")
	v("stripe", "8 signatures and t, the last valid", stripe("t="+ts(t0)+","+strings.Repeat("v1="+zeros+",", 7)+stripeSig), stripeBody, stripeOK)
	v("stripe", "9 signatures, the last valid", stripe("t="+ts(t0)+","+strings.Repeat("v1="+zeros+",", 8)+stripeSig), stripeBody, unauthorized("too many signatures"))
	v("stripe", "9 entries counting v0", stripe("t="+ts(t0)+","+strings.Repeat("v0="+zeros+",", 8)+stripeSig), stripeBody, unauthorized("too many signatures"))
	v("stripe", "empty items are not signatures", stripe("t="+ts(t0)+","+strings.Repeat(", ", 20)+stripeSig), stripeBody, stripeOK)
	head := "t=" + ts(t0) + "," + stripeSig + ","
	v("stripe", "header of 4096 bytes", stripe(head+pad("v0=", 4096-len(head))), stripeBody, stripeOK)
	v("stripe", "header of 4097 bytes", stripe(head+pad("v0=", 4097-len(head))), stripeBody, unauthorized("signature header too large"))

	swKey := []byte("bounds-standard-key-0001")
	swSecret := "whsec_" + base64.StdEncoding.EncodeToString(swKey)
	swBody := `{"type":"user.created"}`
	swSig := "v1," + macBase64(swKey, "msg_b."+ts(t0)+"."+swBody)
	sw := func(sig string) map[string]any {
		return hdr("webhook-id", "msg_b", "webhook-timestamp", ts(t0), "webhook-signature", sig)
	}
	swv := func(name string, sig string, w want) {
		vs = append(vs, vector{Name: "standardwebhooks/bounds: " + name, Kind: "standardwebhooks", Secrets: []string{swSecret},
			Headers: sw(sig), Body: swBody, At: t0, Want: w})
	}
	other := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)) + " "
	swOK := ok("msg_b", "user.created")
	swv("8 signatures, the last valid", strings.Repeat(other, 7)+swSig, swOK)
	swv("9 signatures, the last valid", strings.Repeat(other, 8)+swSig, unauthorized("too many signatures"))
	swv("header of 4096 bytes", pad("v1a,", 4096-len(swSig)-1)+" "+swSig, swOK)
	swv("header of 4097 bytes", pad("v1a,", 4097-len(swSig)-1)+" "+swSig, unauthorized("signature header too large"))

	ghBody := `{"zen":"bounds"}`
	gh := func(sig string) map[string]any {
		return hdr("X-Hub-Signature-256", sig, "X-GitHub-Delivery", "bounds-1", "X-GitHub-Event", "ping")
	}
	v("github", "header of 4097 bytes", gh("sha256="+macHex([]byte(secret), ghBody)+strings.Repeat(" ", 4097-71)), ghBody,
		unauthorized("signature header too large"))
	v("github", "header of 4096 bytes, trailing spaces", gh("sha256="+macHex([]byte(secret), ghBody)+strings.Repeat(" ", 4096-71)), ghBody,
		ok("bounds-1", "ping"))

	shBody := `{"id":1}`
	sh := func(sig string) map[string]any {
		return hdr("X-Shopify-Hmac-Sha256", sig, "X-Shopify-Event-Id", "bounds-2", "X-Shopify-Topic", "orders/create")
	}
	shSig := macBase64([]byte(secret), shBody)
	v("shopify", "header of 4097 bytes", sh(shSig+strings.Repeat(" ", 4097-len(shSig))), shBody, unauthorized("signature header too large"))
	v("shopify", "header of 4096 bytes, trailing spaces", sh(shSig+strings.Repeat(" ", 4096-len(shSig))), shBody, ok("bounds-2", "orders/create"))
	return vs
}
