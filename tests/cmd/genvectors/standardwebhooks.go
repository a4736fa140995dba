package main

import (
	"encoding/base64"
	"strings"
)

// standardWebhooksVectors returns the vectors of kind standardwebhooks.
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
		v("stale and wrong secret: the timestamp is checked first", []string{oldSecret}, sign(secret, id, t0-360, body), body, unauthorized("timestamp out of tolerance")),
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
