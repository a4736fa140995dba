// Package testsign signs deliveries for tests and the bench the way each
// provider documents it, independently of package verify, so that a test of
// the verifier never checks its code against itself.
package testsign

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HMACHex returns hex(HMAC-SHA256(key, the parts concatenated)).
func HMACHex(key []byte, parts ...string) string {
	return hex.EncodeToString(mac(key, parts))
}

// HMACBase64 returns base64(HMAC-SHA256(key, the parts concatenated)).
func HMACBase64(key []byte, parts ...string) string {
	return base64.StdEncoding.EncodeToString(mac(key, parts))
}

func mac(key []byte, parts []string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// Sume returns X-Sume-Timestamp and X-Sume-Signature:
// v1=hex(HMAC-SHA256(secret, "<timestamp>.<body>")).
func Sume(secret, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("X-Sume-Timestamp", ts)
	h.Set("X-Sume-Signature", "v1="+HMACHex([]byte(secret), ts, ".", body))
	return h
}

// Stripe returns Stripe-Signature: t=<timestamp>,v1=hex(HMAC-SHA256(secret, "<t>.<body>")).
func Stripe(secret, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Stripe-Signature", fmt.Sprintf("t=%s,v1=%s", ts, HMACHex([]byte(secret), ts, ".", body)))
	return h
}

// GitHub returns X-Hub-Signature-256: sha256=hex(HMAC-SHA256(secret, body)).
func GitHub(secret, body string) http.Header {
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256="+HMACHex([]byte(secret), body))
	return h
}

// Shopify returns X-Shopify-Hmac-Sha256: base64(HMAC-SHA256(secret, body)).
func Shopify(secret, body string) http.Header {
	h := http.Header{}
	h.Set("X-Shopify-Hmac-Sha256", HMACBase64([]byte(secret), body))
	return h
}

// StandardWebhooks returns webhook-id, webhook-timestamp and
// webhook-signature: v1,base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>")),
// the key being the base64 secret after its optional "whsec_" prefix. A
// secret that is not base64 signs with its own bytes, so that a test can
// forge a signature with any string.
func StandardWebhooks(secret, id, body string, at time.Time) http.Header {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		key = []byte(secret)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", ts)
	h.Set("Webhook-Signature", "v1,"+HMACBase64(key, id, ".", ts, ".", body))
	return h
}

// JSON returns h as the JSON object of header name to value that
// webhooks.ingest_signed takes as its headers argument (the first value of
// each header).
func JSON(h http.Header) string {
	m := make(map[string]string, len(h))
	for name, values := range h {
		if len(values) > 0 {
			m[name] = values[0]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return string(b)
}

// Paddle returns Paddle-Signature: ts=<timestamp>;h1=hex(HMAC-SHA256(secret, "<ts>:<body>")).
func Paddle(secret, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Paddle-Signature", "ts="+ts+";h1="+HMACHex([]byte(secret), ts, ":", body))
	return h
}

// StandardWebhooksV1a returns webhook-id, webhook-timestamp and
// webhook-signature: v1a,base64(Ed25519(priv, "<id>.<timestamp>.<body>")),
// the asymmetric version of Standard Webhooks; its receiver holds the
// public key as whpk_<base64>.
func StandardWebhooksV1a(priv ed25519.PrivateKey, id, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", ts)
	h.Set("Webhook-Signature", "v1a,"+base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(id+"."+ts+"."+body))))
	return h
}

// Whpk returns the whpk_ public key of priv, as a Standard Webhooks receiver
// is given it.
func Whpk(priv ed25519.PrivateKey) string {
	return "whpk_" + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// Slack returns X-Slack-Request-Timestamp and X-Slack-Signature:
// v0=hex(HMAC-SHA256(signing secret, "v0:<timestamp>:<body>")).
func Slack(secret, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+HMACHex([]byte(secret), "v0:", ts, ":", body))
	return h
}

// Linear returns Linear-Signature: hex(HMAC-SHA256(secret, body)) and
// Linear-Delivery: delivery. Linear signs the body only; its timestamp is
// the body's webhookTimestamp, which the caller writes.
func Linear(secret, delivery, body string) http.Header {
	h := http.Header{}
	h.Set("Linear-Signature", HMACHex([]byte(secret), body))
	h.Set("Linear-Delivery", delivery)
	return h
}

// Square returns X-Square-HmacSha256-Signature:
// base64(HMAC-SHA256(signature key, notification URL + body)).
func Square(key, notificationURL, body string) http.Header {
	h := http.Header{}
	h.Set("X-Square-HmacSha256-Signature", HMACBase64([]byte(key), notificationURL, body))
	return h
}
