package main

import (
	"strings"
)

// shopifyVectors returns the vectors of kind shopify.
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
