package main

import (
	"strings"
)

// paddleVectors returns the vectors of kind paddle: Paddle-Signature
// ts=<ts>;h1=<hex HMAC-SHA256(secret, "<ts>:<body>")>, the bounds included.
func paddleVectors() []vector {
	const secret = "pdl_ntfset_01vector_current_5b7d"
	const oldSecret = "pdl_ntfset_01vector_previous_c3a1"
	const wrong = "pdl_ntfset_01vector_wrong_0e94"
	sign := func(key string, at int64, body string) map[string]any {
		return hdr("Paddle-Signature", "ts="+ts(at)+";h1="+macHex([]byte(key), ts(at)+":"+body))
	}
	raw := func(s string) map[string]any { return hdr("Paddle-Signature", s) }
	body := `{"event_id":"evt_01hv8x2acma2gz4my2d8kfn7kx","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:20.000000Z","notification_id":"ntf_01hv8x2af4mr0j2cy0wqv0nm3n","data":{"id":"txn_01hv8wptq8987qeep44cyrewp9","customer_id":"ctm_01hv6y1jedq4p1n0yqn5ba3ky4"}}`
	h1 := macHex([]byte(secret), ts(t0)+":"+body)
	tS := ts(t0)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "paddle/" + name, Kind: "paddle", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok("evt_01hv8x2acma2gz4my2d8kfn7kx", "transaction.completed")
	zeros := strings.Repeat("0", 64)
	vs := []vector{
		v("valid", one, sign(secret, t0, body), body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, sign(secret, t0, body), body, valid),
		v("rotation: two h1, the second matching", one, raw("ts="+tS+";h1="+macHex([]byte(oldSecret), tS+":"+body)+";h1="+h1), body, valid),
		v("wrong secret", one, sign(wrong, t0, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, sign(secret, t0, body), strings.Replace(body, "txn_01", "txn_02", 1), unauthorized("signature mismatch")),
		v("re-serialised body", one, sign(secret, t0, body), strings.ReplaceAll(body, ",", ", "), unauthorized("signature mismatch")),
		v("signed with . instead of :", one, raw("ts="+tS+";h1="+macHex([]byte(secret), tS+"."+body)), body, unauthorized("signature mismatch")),
		v("unknown schemes ignored", one, raw("ts="+tS+";h2=abc;h1="+h1), body, valid),
		v("spaces around items", one, raw(" ts="+tS+" ; h1="+h1+" "), body, valid),
		v("order does not matter", one, raw("h1="+h1+";ts="+tS), body, valid),
		v("ts repeated with the same value", one, raw("ts="+tS+";h1="+h1+";ts="+tS), body, valid),
		v("lower-case header name", one, hdr("paddle-signature", "ts="+tS+";h1="+h1), body, valid),
		v("missing header", one, hdr(), body, unauthorized("signature missing")),
		v("blank header", one, raw("  "), body, unauthorized("signature missing")),
		v("malformed: garbage", one, raw("garbage"), body, unauthorized("signature malformed")),
		v("malformed: comma separated", one, raw("ts="+tS+",h1="+h1), body, unauthorized("signature malformed")),
		v("malformed: h1 not hex", one, raw("ts="+tS+";h1=xyz"), body, unauthorized("signature malformed")),
		v("malformed: upper-case scheme", one, raw("ts="+tS+";H1="+h1), body, unauthorized("signature malformed")),
		v("timestamp missing", one, raw("h1="+h1), body, unauthorized("timestamp missing")),
		v("timestamp empty", one, raw("ts=;h1="+h1), body, unauthorized("timestamp malformed")),
		v("timestamp malformed", one, raw("ts=now;h1="+h1), body, unauthorized("timestamp malformed")),
		v("timestamp negative", one, raw("ts=-1;h1="+h1), body, unauthorized("timestamp malformed")),
		v("two different timestamps", one, raw("ts="+tS+";ts=1;h1="+h1), body, unauthorized("timestamp malformed")),
		v("timestamp changed after signing", one, raw("ts="+ts(t0-1)+";h1="+h1), body, unauthorized("signature mismatch")),
		v("stale timestamp (-6 min)", one, sign(secret, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(secret, t0+360, body), body, unauthorized("timestamp out of tolerance")),
		v("stale and wrong secret: the timestamp is checked first", one, sign(wrong, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("within tolerance (-5 min)", one, sign(secret, t0-300, body), body, valid),
		v("within tolerance (+5 min)", one, sign(secret, t0+300, body), body, valid),
		v("bounds: 8 signatures and ts, the last valid", one, raw("ts="+tS+";"+strings.Repeat("h1="+zeros+";", 7)+"h1="+h1), body, valid),
		v("bounds: 9 signatures, the last valid", one, raw("ts="+tS+";"+strings.Repeat("h1="+zeros+";", 8)+"h1="+h1), body, unauthorized("too many signatures")),
		v("bounds: empty items are not signatures", one, raw("ts="+tS+";"+strings.Repeat("; ", 20)+"h1="+h1), body, valid),
	}
	head := "ts=" + tS + ";h1=" + h1 + ";"
	pad := func(n int) string { return "h0=" + strings.Repeat("a", n-3) }
	vs = append(vs,
		v("bounds: header of 4096 bytes", one, raw(head+pad(4096-len(head))), body, valid),
		v("bounds: header of 4097 bytes", one, raw(head+pad(4097-len(head))), body, unauthorized("signature header too large")),
	)
	key := func(name, body string, w want) vector { return v(name, one, sign(secret, t0, body), body, w) }
	vs = append(vs,
		key("key: event", `{"event_id":"evt_1","event_type":"subscription.updated","data":{"id":"sub_1"}}`, ok("evt_1", "subscription.updated")),
		key("key: notification_id is not the key", `{"notification_id":"ntf_1","event_type":"subscription.updated"}`, badRequest("idempotency key missing")),
		key("key: nested event_id ignored", `{"event_type":"subscription.updated","data":{"event_id":"evt_1"}}`, badRequest("idempotency key missing")),
		key("key: null event_id", `{"event_id":null,"event_type":"subscription.updated"}`, badRequest("idempotency key missing")),
		key("key: empty event_id", `{"event_id":"","event_type":"subscription.updated"}`, badRequest("idempotency key invalid")),
		key("key: object event_id", `{"event_id":{},"event_type":"subscription.updated"}`, badRequest("idempotency key invalid")),
		key("type: missing", `{"event_id":"evt_1"}`, badRequest("event type missing")),
		key("type: type is not event_type", `{"event_id":"evt_1","type":"subscription.updated"}`, badRequest("event type missing")),
		key("type: not a string", `{"event_id":"evt_1","event_type":["a"]}`, badRequest("event type missing")),
		key("type: with a control character", `{"event_id":"evt_1","event_type":"a\u001fb"}`, badRequest("event type invalid")),
		key("body: not json", `event_id=evt_1`, badRequest("body not json")),
	)
	return vs
}
