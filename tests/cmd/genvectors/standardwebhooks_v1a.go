package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"strings"
)

// standardWebhooksV1aVectors returns the vectors of the asymmetric version
// of kind standardwebhooks: webhook-signature v1a,<base64 Ed25519
// signature of "<id>.<ts>.<body>">, verified with whpk_<base64 public key>
// secrets, alone or beside whsec_ ones. The keys are those of RFC 8032's
// tests 1 and 2; signatures are computed here with crypto/ed25519.
func standardWebhooksV1aVectors() []vector {
	key := func(seedHex string) ed25519.PrivateKey {
		seed, err := hex.DecodeString(seedHex)
		if err != nil {
			panic(err)
		}
		return ed25519.NewKeyFromSeed(seed)
	}
	priv := key("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")  // RFC 8032 test 1
	other := key("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb") // RFC 8032 test 2
	whpk := func(k ed25519.PrivateKey) string {
		return "whpk_" + base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey))
	}
	pub, otherPub := whpk(priv), whpk(other)
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	whsecKey, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(whsec, "whsec_"))
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	body := `{"type":"invoice.paid","data":{"id":"in_1"}}`
	rawSig := func(k ed25519.PrivateKey, id string, at int64, body string) []byte {
		return ed25519.Sign(k, []byte(id+"."+ts(at)+"."+body))
	}
	v1a := func(s []byte) string { return "v1a," + base64.StdEncoding.EncodeToString(s) }
	sign := func(k ed25519.PrivateKey, id string, at int64, body string) map[string]any {
		return hdr("webhook-id", id, "webhook-timestamp", ts(at), "webhook-signature", v1a(rawSig(k, id, at, body)))
	}
	good := sign(priv, id, t0, body)
	sig := good["webhook-signature"].(string)
	v1 := "v1," + macBase64(whsecKey, id+"."+ts(t0)+"."+body)
	other2 := v1a(rawSig(other, id, t0, body)) // well-formed, by a key not configured
	zeroV1 := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	// S + L: the same signature with a scalar that is not reduced, which
	// RFC 8032 (and Go) refuse.
	sPlusL := func(s []byte) []byte {
		le := func(b []byte) []byte {
			out := make([]byte, len(b))
			for i := range b {
				out[i] = b[len(b)-1-i]
			}
			return out
		}
		l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
		n := new(big.Int).SetBytes(le(s[32:]))
		n.Add(n, l)
		sb := make([]byte, 32)
		n.FillBytes(sb)
		return append(append([]byte{}, s[:32]...), le(sb)...)
	}
	highBit := func(s []byte) []byte {
		out := append([]byte{}, s...)
		out[63] |= 0x80
		return out
	}
	v := func(name string, secrets []string, h map[string]any, body string, w want) vector {
		return vector{Name: "standardwebhooks/v1a: " + name, Kind: "standardwebhooks", Secrets: secrets, Headers: h, Body: body, At: t0, Want: w}
	}
	valid := ok(id, "invoice.paid")
	one := []string{pub}
	return []vector{
		v("valid", one, good, body, valid),
		v("valid with an unpadded whpk_", []string{strings.TrimRight(pub, "=")}, good, body, valid),
		v("valid with the second of two public keys", []string{otherPub, pub}, good, body, valid),
		v("beside a whsec_ secret", []string{whsec, pub}, good, body, valid),
		v("v1 beside a whpk_ key", []string{pub, whsec}, with(good, "webhook-signature", v1), body, valid),
		v("both versions sent, v1a matching", one, with(good, "webhook-signature", v1+" "+sig), body, valid),
		v("both versions sent, v1 matching", []string{whsec, pub}, with(good, "webhook-signature", sig+" "+v1), body, valid),
		v("wrong public key", []string{otherPub}, good, body, unauthorized("signature mismatch")),
		v("with only a whsec_ secret", []string{whsec}, good, body, unauthorized("signature mismatch")),
		v("v1 with only a whpk_ key", one, with(good, "webhook-signature", v1), body, unauthorized("signature mismatch")),
		v("tampered body", one, good, strings.Replace(body, "in_1", "in_2", 1), unauthorized("signature mismatch")),
		v("webhook-id changed after signing", one, with(good, "webhook-id", "msg_other"), body, unauthorized("signature mismatch")),
		v("timestamp changed after signing", one, with(good, "webhook-timestamp", ts(t0+1)), body, unauthorized("signature mismatch")),
		v("S not reduced (S + L)", one, with(good, "webhook-signature", v1a(sPlusL(rawSig(priv, id, t0, body)))), body, unauthorized("signature mismatch")),
		v("top bit of S set", one, with(good, "webhook-signature", v1a(highBit(rawSig(priv, id, t0, body)))), body, unauthorized("signature mismatch")),
		v("R of another signature", one, with(good, "webhook-signature",
			v1a(append(append([]byte{}, rawSig(priv, id, t0+1, body)[:32]...), rawSig(priv, id, t0, body)[32:]...))), body, unauthorized("signature mismatch")),
		v("malformed: 63-byte v1a", one, with(good, "webhook-signature", "v1a,"+base64.StdEncoding.EncodeToString(make([]byte, 63))), body, unauthorized("signature malformed")),
		v("malformed: unpadded v1a", one, with(good, "webhook-signature", strings.TrimRight(sig, "=")), body, unauthorized("signature malformed")),
		v("malformed: v1a under the v1 label", one, with(good, "webhook-signature", "v1,"+sig[4:]), body, unauthorized("signature malformed")),
		v("stale timestamp (-6 min)", one, sign(priv, id, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("future timestamp (+6 min)", one, sign(priv, id, t0+360, body), body, unauthorized("timestamp out of tolerance")),
		// The timestamp is checked before any signature: a stale delivery
		// signed by other keys is refused for its timestamp.
		v("stale, signed by another key", one, sign(other, id, t0-360, body), body, unauthorized("timestamp out of tolerance")),
		v("stale, two entries signed by another key", one, with(with(good, "webhook-signature", other2+" "+v1a(rawSig(other, id, t0-360, body))),
			"webhook-timestamp", ts(t0-360)), body, unauthorized("timestamp out of tolerance")),
		// At most 2 v1a entries (the current key and, while rotating, the
		// previous one): a third is refused before any verification, even a
		// valid one, and malformed entries labelled v1a count.
		v("two entries, the second valid", one, with(good, "webhook-signature", other2+" "+sig), body, valid),
		v("two entries and six v1, one v1a valid", one, with(good, "webhook-signature",
			strings.Repeat(zeroV1+" ", 6)+other2+" "+sig), body, valid),
		v("three entries, the last valid", one, with(good, "webhook-signature", other2+" "+other2+" "+sig), body,
			unauthorized("too many asymmetric signatures")),
		v("three entries, stale", one, with(with(good, "webhook-signature", other2+" "+other2+" "+sig), "webhook-timestamp", ts(t0-360)), body,
			unauthorized("too many asymmetric signatures")),
		v("three malformed entries and a valid v1", []string{whsec, pub}, with(good, "webhook-signature", "v1a,x v1a,y v1a,z "+v1), body,
			unauthorized("too many asymmetric signatures")),
		v("nine entries: the count of all signatures first", one, with(good, "webhook-signature", strings.Repeat(other2+" ", 8)+sig), body,
			unauthorized("too many signatures")),
		v("within tolerance (+5 min)", one, sign(priv, id, t0+300, body), body, valid),
		v("type missing", one, sign(priv, id, t0, `{"data":{}}`), `{"data":{}}`, badRequest("event type missing")),
	}
}
