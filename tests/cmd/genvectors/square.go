package main

import "strings"

// squareVectors returns the vectors of kind square:
// X-Square-HmacSha256-Signature base64(HMAC-SHA256(signature key,
// <notification URL> + <body>)), as Square documents it ("Verify and
// validate an event notification"); the URL is the vector's url.
func squareVectors() []vector {
	const key = "sq0wsk_vector_current_9a8b7c"
	const oldKey = "sq0wsk_vector_previous_1d2e3f"
	const wrong = "sq0wsk_vector_wrong_4a5b6c"
	const url = "https://hooks.example.com/webhooks/square?tenant=7"
	body := `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","created_at":"2023-11-14T22:13:20Z","data":{"type":"payment","id":"KkAkhdMsgzn59SM8A89WgKwekxLZY","object":{"payment":{"amount_money":{"amount":100,"currency":"USD"}}}}}`
	sign := func(k, u, body string) map[string]any {
		return hdr("X-Square-HmacSha256-Signature", macBase64([]byte(k), u+body))
	}
	good := sign(key, url, body)
	sig := good["X-Square-HmacSha256-Signature"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "square/" + name, Kind: "square", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w, URL: url}
	}
	signed := func(name, body string, w want) vector { return v(name, []string{key}, sign(key, url, body), body, w) }
	one := []string{key}
	valid := ok("13b867cf-db3d-4b1c-90b6-2f32a9d78124", "payment.updated")
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two keys", []string{oldKey, key}, good, body, valid),
		v("old X-Square-Signature beside it ignored", one, with(good, "X-Square-Signature", "bm90LXNoYTE="), body, valid),
		v("wrong key", one, sign(wrong, url, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "100", "900", 1), unauthorized("signature mismatch")),
		v("signed for another path (a proxy rewrote it)", one, sign(key, "https://hooks.example.com/square?tenant=7", body), body, unauthorized("signature mismatch")),
		v("signed for http (TLS ended at a proxy)", one, sign(key, "http://hooks.example.com/webhooks/square?tenant=7", body), body, unauthorized("signature mismatch")),
		v("signed without the query", one, sign(key, "https://hooks.example.com/webhooks/square", body), body, unauthorized("signature mismatch")),
		v("signed over the body alone", one, sign(key, "", body), body, unauthorized("signature mismatch")),
		v("surrounding spaces trimmed", one, with(good, "X-Square-HmacSha256-Signature", " "+sig+" "), body, valid),
		v("missing header", one, with(good, "X-Square-HmacSha256-Signature", nil), body, unauthorized("signature missing")),
		v("blank header", one, with(good, "X-Square-HmacSha256-Signature", " "), body, unauthorized("signature missing")),
		v("malformed: hex", one, with(good, "X-Square-HmacSha256-Signature", macHex([]byte(key), url+body)), body, unauthorized("signature malformed")),
		v("malformed: unpadded", one, with(good, "X-Square-HmacSha256-Signature", strings.TrimRight(sig, "=")), body, unauthorized("signature malformed")),
		v("malformed: short", one, with(good, "X-Square-HmacSha256-Signature", "AAAA"), body, unauthorized("signature malformed")),
		signed("event_id missing", `{"type":"payment.updated","data":{"event_id":"e"}}`, badRequest("idempotency key missing")),
		signed("event_id not a string", `{"type":"payment.updated","event_id":true}`, badRequest("idempotency key invalid")),
		signed("type missing (data.type ignored)", `{"event_id":"e1","data":{"type":"payment"}}`, badRequest("event type missing")),
		signed("body not json", `event_id=e1`, badRequest("body not json")),
	}
}
