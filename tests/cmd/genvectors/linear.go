package main

import (
	"strconv"
	"strings"
)

// linearVectors returns the vectors of kind linear: Linear-Signature
// hex(HMAC-SHA256(secret, body)), the body's webhookTimestamp (unix
// milliseconds) within 5 minutes, the key in Linear-Delivery, as Linear
// documents it ("Securing webhooks").
func linearVectors() []vector {
	const secret = "lin_wh_vector_current_3f9a1c"
	const oldSecret = "lin_wh_vector_previous_77b0e2"
	const wrong = "lin_wh_vector_wrong_d41c09"
	const delivery = "234d1a4e-b617-4388-90fe-adc3633d6b72"
	ms := t0*1000 + 123
	bodyAt := func(tsJSON string) string {
		return `{"action":"create","actor":{"id":"u1","type":"user"},"createdAt":"2023-11-14T22:13:20.000Z","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Bug"},` +
			`"url":"https://linear.app/acme/issue/ENG-1","type":"Issue","organizationId":"o1","webhookTimestamp":` + tsJSON + `,"webhookId":"w1"}`
	}
	body := bodyAt(strconv.FormatInt(ms, 10))
	sign := func(key, body string) map[string]any {
		return hdr("Linear-Signature", macHex([]byte(key), body), "Linear-Delivery", delivery, "Linear-Event", "Issue")
	}
	good := sign(secret, body)
	sig := good["Linear-Signature"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "linear/" + name, Kind: "linear", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	signed := func(name, body string, w want) vector { return v(name, []string{secret}, sign(secret, body), body, w) }
	one := []string{secret}
	valid := ok(delivery, "Issue.create")
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, valid),
		v("wrong secret", one, sign(wrong, body), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "Bug", "Bag", 1), unauthorized("signature mismatch")),
		v("timestamp changed after signing", one, good, bodyAt(strconv.FormatInt(ms+1, 10)), unauthorized("signature mismatch")),
		v("upper-case hex", one, with(good, "Linear-Signature", strings.ToUpper(sig)), body, valid),
		v("surrounding spaces trimmed", one, with(good, "Linear-Signature", " "+sig+" "), body, valid),
		v("missing header", one, with(good, "Linear-Signature", nil), body, unauthorized("signature missing")),
		v("blank header", one, with(good, "Linear-Signature", " "), body, unauthorized("signature missing")),
		v("malformed: sha256= prefix", one, with(good, "Linear-Signature", "sha256="+sig), body, unauthorized("signature malformed")),
		v("malformed: base64", one, with(good, "Linear-Signature", macBase64([]byte(secret), body)), body, unauthorized("signature malformed")),
		v("malformed: short", one, with(good, "Linear-Signature", sig[:62]), body, unauthorized("signature malformed")),
		signed("timestamp missing", `{"action":"create","type":"Issue"}`, unauthorized("timestamp missing")),
		signed("timestamp null", bodyAt("null"), unauthorized("timestamp missing")),
		signed("nested timestamp ignored", `{"action":"create","type":"Issue","data":{"webhookTimestamp":1700000000123}}`, unauthorized("timestamp missing")),
		signed("body not json", `action=create`, badRequest("body not json")),
		signed("timestamp a string", bodyAt(`"1700000000123"`), unauthorized("timestamp malformed")),
		signed("timestamp with a fraction", bodyAt("1700000000123.5"), unauthorized("timestamp malformed")),
		signed("timestamp with an exponent", bodyAt("17e11"), unauthorized("timestamp malformed")),
		signed("timestamp negative", bodyAt("-1700000000123"), unauthorized("timestamp malformed")),
		signed("timestamp of 19 digits", bodyAt("1700000000123000000"), unauthorized("timestamp malformed")),
		signed("the last of two timestamps counts", strings.Replace(bodyAt("1"), `"webhookId"`, `"webhookTimestamp":`+strconv.FormatInt(ms, 10)+`,"webhookId"`, 1), valid),
		signed("seconds instead of milliseconds", bodyAt(ts(t0)), unauthorized("timestamp out of tolerance")),
		signed("stale timestamp (-5 min 1 ms)", bodyAt(strconv.FormatInt(t0*1000-300_001, 10)), unauthorized("timestamp out of tolerance")),
		signed("future timestamp (+5 min 1 ms)", bodyAt(strconv.FormatInt(t0*1000+300_001, 10)), unauthorized("timestamp out of tolerance")),
		signed("within tolerance (-5 min)", bodyAt(strconv.FormatInt(t0*1000-300_000, 10)), valid),
		signed("within tolerance (+5 min)", bodyAt(strconv.FormatInt(t0*1000+300_000, 10)), valid),
		v("delivery missing", one, with(good, "Linear-Delivery", nil), body, badRequest("idempotency key missing")),
		v("delivery blank", one, with(good, "Linear-Delivery", "  "), body, badRequest("idempotency key invalid")),
		signed("action missing", `{"type":"Issue","webhookTimestamp":`+strconv.FormatInt(ms, 10)+`}`, badRequest("event type missing")),
		signed("type with a control character", `{"action":"create","type":"Iss\u0001ue","webhookTimestamp":`+strconv.FormatInt(ms, 10)+`}`, badRequest("event type invalid")),
		signed("body not an object", `[{"webhookTimestamp":`+strconv.FormatInt(ms, 10)+`}]`, badRequest("body not json")),
		signed("body nested too deep", `{"action":"create","type":"Issue","webhookTimestamp":`+strconv.FormatInt(ms, 10)+`,"d":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`, badRequest("body nested too deep")),
		signed("body too deep with a stale timestamp", `{"action":"create","type":"Issue","webhookTimestamp":1,"d":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`, unauthorized("timestamp out of tolerance")),
		signed("a body jsonb refuses, with a stale timestamp", `{"webhookTimestamp":1,"s":"\u0000"}`, badRequest("body not json")),
	}
}
