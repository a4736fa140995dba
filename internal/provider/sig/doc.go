// Package sig holds what every provider kind's signature scheme is built
// from: the [Provider] interface a kind's verifier implements, the
// [Delivery] it extracts, the [*RejectError] every refusal is, the bounds on
// signature headers, HMAC keys with a constant-time [Keys.Match], signed
// timestamps and their tolerance, and the JSON [Envelope] a body is read
// as. It uses the standard library only. Package runner/verify is its public
// face; the kinds themselves live in internal/provider/<kind>.
package sig
