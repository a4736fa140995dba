package main

import (
	"encoding/base64"
	"strings"
)

// sumeVectors returns the vectors of kind sume.
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
		// The timestamp is checked before any MAC: a stale or future delivery
		// is refused for its timestamp, whatever its signature.
		v("stale and wrong secret", one, sign(wrong, t0-3600, body), body, unauthorized("timestamp out of tolerance")),
		v("future and wrong secret", one, sign(wrong, t0+3600, body), body, unauthorized("timestamp out of tolerance")),
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
