package main

import (
	"strings"
)

// githubVectors returns the vectors of kind github.
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
