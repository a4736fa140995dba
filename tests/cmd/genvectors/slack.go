package main

import "strings"

// slackVectors returns the vectors of kind slack: X-Slack-Signature
// v0=hex(HMAC-SHA256(signing secret, "v0:<X-Slack-Request-Timestamp>:<body>")),
// as Slack documents it ("Verifying requests from Slack").
func slackVectors() []vector {
	const secret = "8f742231b10e8888abcd99yyyzzz85a5" // the secret of Slack's own example
	const oldSecret = "slack_vector_previous_5e21a0c4"
	const wrong = "slack_vector_wrong_0b7d11f2c9"
	body := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","team_id":"T061EG9R6","api_app_id":"A0PNCHHK2","event":{"type":"app_mention","user":"U061F7AUR","text":"hi","ts":"1515449522.000016","channel":"C0LAN2Q65"},"type":"event_callback","event_id":"Ev0PV52K25","event_time":1515449522}`
	sign := func(key, body string, at int64) map[string]any {
		return hdr("X-Slack-Request-Timestamp", ts(at), "X-Slack-Signature", "v0="+macHex([]byte(key), "v0:"+ts(at)+":"+body))
	}
	good := sign(secret, body, t0)
	sig := good["X-Slack-Signature"].(string)
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "slack/" + name, Kind: "slack", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	one := []string{secret}
	valid := ok("Ev0PV52K25", "app_mention")
	challenge := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	rateLimited := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","type":"app_rate_limited","team_id":"T123456","minute_rate_limited":1518467820,"api_app_id":"A123456"}`
	uninstalled := `{"type":"app_uninstalled_team","event_id":"Ev9","team_id":"T1"}`
	noInner := `{"type":"event_callback","event_id":"Ev1","event":{"text":"hi"}}`
	nested := `{"type":"event_callback","event":{"type":"message","event_id":"Ev1"}}`
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with the second of two secrets", []string{oldSecret, secret}, good, body, valid),
		v("retry (X-Slack-Retry-Num) verifies the same", one, with(with(good, "X-Slack-Retry-Num", "1"), "X-Slack-Retry-Reason", "http_timeout"), body, valid),
		v("top-level type when not an event_callback", one, sign(secret, uninstalled, t0), uninstalled, ok("Ev9", "app_uninstalled_team")),
		v("wrong secret", one, sign(wrong, body, t0), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "hi", "ho", 1), unauthorized("signature mismatch")),
		v("timestamp changed after signing", one, with(good, "X-Slack-Request-Timestamp", ts(t0+1)), body, unauthorized("signature mismatch")),
		v("signed with dots, not colons", one, with(good, "X-Slack-Signature", "v0="+macHex([]byte(secret), "v0."+ts(t0)+"."+body)), body, unauthorized("signature mismatch")),
		v("surrounding spaces trimmed", one, with(good, "X-Slack-Signature", " "+sig+" "), body, valid),
		v("upper-case hex", one, with(good, "X-Slack-Signature", "v0="+strings.ToUpper(sig[3:])), body, valid),
		v("missing header", one, with(good, "X-Slack-Signature", nil), body, unauthorized("signature missing")),
		v("blank header", one, with(good, "X-Slack-Signature", "  "), body, unauthorized("signature missing")),
		v("malformed: no v0=", one, with(good, "X-Slack-Signature", sig[3:]), body, unauthorized("signature malformed")),
		v("malformed: v1=", one, with(good, "X-Slack-Signature", "v1="+sig[3:]), body, unauthorized("signature malformed")),
		v("malformed: short", one, with(good, "X-Slack-Signature", sig[:40]), body, unauthorized("signature malformed")),
		v("malformed: two signatures", one, with(good, "X-Slack-Signature", sig+","+sig), body, unauthorized("signature malformed")),
		v("timestamp missing", one, with(good, "X-Slack-Request-Timestamp", nil), body, unauthorized("timestamp missing")),
		v("timestamp malformed", one, with(good, "X-Slack-Request-Timestamp", "now"), body, unauthorized("timestamp malformed")),
		v("stale timestamp (-6 min)", one, sign(secret, body, t0-360), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(secret, body, t0+360), body, unauthorized("timestamp out of tolerance")),
		v("stale and wrong secret: the timestamp is checked first", one, sign(wrong, body, t0-360), body, unauthorized("timestamp out of tolerance")),
		v("within tolerance (-5 min)", one, sign(secret, body, t0-300), body, valid),
		v("unsigned url_verification", one, hdr(), challenge, unauthorized("signature missing")),
		v("url_verification with a wrong signature", one, sign(wrong, challenge, t0), challenge, unauthorized("signature mismatch")),
		v("url_verification without a challenge", one, sign(secret, `{"type":"url_verification"}`, t0), `{"type":"url_verification"}`, badRequest("idempotency key missing")),
		v("event_id missing (app_rate_limited)", one, sign(secret, rateLimited, t0), rateLimited, badRequest("idempotency key missing")),
		v("nested event_id ignored", one, sign(secret, nested, t0), nested, badRequest("idempotency key missing")),
		v("event_id blank", one, sign(secret, `{"type":"event_callback","event_id":" ","event":{"type":"message"}}`, t0), `{"type":"event_callback","event_id":" ","event":{"type":"message"}}`, badRequest("idempotency key invalid")),
		v("event_callback without an inner type", one, sign(secret, noInner, t0), noInner, badRequest("event type missing")),
		v("body not json (a slash command)", one, sign(secret, "token=x&command=%2Fweather", t0), "token=x&command=%2Fweather", badRequest("body not json")),
	}
}
