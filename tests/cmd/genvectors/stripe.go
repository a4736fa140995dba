package main

import (
	"strings"
)

// stripeVectors returns the vectors of kind stripe.
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
		v("stale and wrong secret: the timestamp is checked first", one, sign(wrong, t0-360, body), body, unauthorized("timestamp out of tolerance")),
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
