package main

import (
	"encoding/base64"
	"strings"
)

// boundsVectors: a signature header (its first value) over 4096 bytes, or
// listing more than 8 signatures, is refused before any HMAC (401 "signature
// header too large", "too many signatures"); exactly at the bounds, a valid
// signature is accepted.
func boundsVectors() []vector {
	const secret = "bounds_vector_secret_7c1e"
	zeros := strings.Repeat("0", 64)
	var vs []vector
	v := func(kind, name string, h map[string]any, body string, w want) {
		vs = append(vs, vector{Name: kind + "/bounds: " + name, Kind: kind, Secrets: []string{secret}, Headers: h, Body: body, At: t0, Want: w})
	}
	// pad returns filler of n bytes that is one entry of another scheme.
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("a", n-len(prefix)) }

	sumeBody := `{"event":"job.completed","job_id":"job_b"}`
	sumeSig := "v1=" + macHex([]byte(secret), ts(t0)+"."+sumeBody)
	sume := func(sig string) map[string]any { return hdr("X-Sume-Timestamp", ts(t0), "X-Sume-Signature", sig) }
	sumeOK := ok("job_b", "job.completed")
	v("sume", "8 signatures, the last valid", sume(strings.Repeat("v1="+zeros+",", 7)+sumeSig), sumeBody, sumeOK)
	v("sume", "9 signatures, the last valid", sume(strings.Repeat("v1="+zeros+",", 8)+sumeSig), sumeBody, unauthorized("too many signatures"))
	v("sume", "9 entries of other schemes and one v1", sume(strings.Repeat("v0=x ", 8)+sumeSig), sumeBody, unauthorized("too many signatures"))
	v("sume", "header of 4096 bytes", sume(pad("v9=", 4096-len(sumeSig)-1)+" "+sumeSig), sumeBody, sumeOK)
	v("sume", "header of 4097 bytes", sume(pad("v9=", 4097-len(sumeSig)-1)+" "+sumeSig), sumeBody, unauthorized("signature header too large"))

	stripeBody := `{"id":"evt_b","object":"event","type":"invoice.paid"}`
	stripeSig := "v1=" + macHex([]byte(secret), ts(t0)+"."+stripeBody)
	stripe := func(sig string) map[string]any { return hdr("Stripe-Signature", sig) }
	stripeOK := ok("evt_b", "invoice.paid")
	v("stripe", "8 signatures and t, the last valid", stripe("t="+ts(t0)+","+strings.Repeat("v1="+zeros+",", 7)+stripeSig), stripeBody, stripeOK)
	v("stripe", "9 signatures, the last valid", stripe("t="+ts(t0)+","+strings.Repeat("v1="+zeros+",", 8)+stripeSig), stripeBody, unauthorized("too many signatures"))
	v("stripe", "9 entries counting v0", stripe("t="+ts(t0)+","+strings.Repeat("v0="+zeros+",", 8)+stripeSig), stripeBody, unauthorized("too many signatures"))
	v("stripe", "empty items are not signatures", stripe("t="+ts(t0)+","+strings.Repeat(", ", 20)+stripeSig), stripeBody, stripeOK)
	head := "t=" + ts(t0) + "," + stripeSig + ","
	v("stripe", "header of 4096 bytes", stripe(head+pad("v0=", 4096-len(head))), stripeBody, stripeOK)
	v("stripe", "header of 4097 bytes", stripe(head+pad("v0=", 4097-len(head))), stripeBody, unauthorized("signature header too large"))

	swKey := []byte("bounds-standard-key-0001")
	swSecret := "whsec_" + base64.StdEncoding.EncodeToString(swKey)
	swBody := `{"type":"user.created"}`
	swSig := "v1," + macBase64(swKey, "msg_b."+ts(t0)+"."+swBody)
	sw := func(sig string) map[string]any {
		return hdr("webhook-id", "msg_b", "webhook-timestamp", ts(t0), "webhook-signature", sig)
	}
	swv := func(name string, sig string, w want) {
		vs = append(vs, vector{Name: "standardwebhooks/bounds: " + name, Kind: "standardwebhooks", Secrets: []string{swSecret},
			Headers: sw(sig), Body: swBody, At: t0, Want: w})
	}
	other := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)) + " "
	swOK := ok("msg_b", "user.created")
	swv("8 signatures, the last valid", strings.Repeat(other, 7)+swSig, swOK)
	swv("9 signatures, the last valid", strings.Repeat(other, 8)+swSig, unauthorized("too many signatures"))
	swv("header of 4096 bytes", pad("v1a,", 4096-len(swSig)-1)+" "+swSig, swOK)
	swv("header of 4097 bytes", pad("v1a,", 4097-len(swSig)-1)+" "+swSig, unauthorized("signature header too large"))

	ghBody := `{"zen":"bounds"}`
	gh := func(sig string) map[string]any {
		return hdr("X-Hub-Signature-256", sig, "X-GitHub-Delivery", "bounds-1", "X-GitHub-Event", "ping")
	}
	v("github", "header of 4097 bytes", gh("sha256="+macHex([]byte(secret), ghBody)+strings.Repeat(" ", 4097-71)), ghBody,
		unauthorized("signature header too large"))
	v("github", "header of 4096 bytes, trailing spaces", gh("sha256="+macHex([]byte(secret), ghBody)+strings.Repeat(" ", 4096-71)), ghBody,
		ok("bounds-1", "ping"))

	shBody := `{"id":1}`
	sh := func(sig string) map[string]any {
		return hdr("X-Shopify-Hmac-Sha256", sig, "X-Shopify-Event-Id", "bounds-2", "X-Shopify-Topic", "orders/create")
	}
	shSig := macBase64([]byte(secret), shBody)
	v("shopify", "header of 4097 bytes", sh(shSig+strings.Repeat(" ", 4097-len(shSig))), shBody, unauthorized("signature header too large"))
	v("shopify", "header of 4096 bytes, trailing spaces", sh(shSig+strings.Repeat(" ", 4096-len(shSig))), shBody, ok("bounds-2", "orders/create"))
	return vs
}
