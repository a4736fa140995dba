package tests

import (
	"crypto/ed25519"
	mrand "math/rand/v2"
	"testing"
)

// TestEd25519SQLAgreesWithGo: webhooks._ed25519_verify, whose arithmetic
// keeps values only partly reduced modulo p between steps, gives Go's
// crypto/ed25519.Verify answer on signatures of random keys and messages
// (fixed seed: the same cases on every run), each also with its message,
// R, S or key altered and with S + L (not reduced), both with the key's
// multiples computed on the fly and read from webhooks.ed25519_key_tables.
func TestEd25519SQLAgreesWithGo(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	rng := mrand.New(mrand.NewPCG(25519, 8032))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	flip := func(b []byte, i int) []byte {
		out := append([]byte{}, b...)
		out[i] ^= 1 << rng.UintN(8)
		return out
	}
	// plusL adds the group order L to S (little-endian), as a malleable
	// signer would; Go refuses S >= L.
	plusL := func(sig []byte) []byte {
		l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
		out := append([]byte{}, sig...)
		carry := 0
		for i := range 32 {
			s := int(out[32+i]) + int(l[i]) + carry
			out[32+i], carry = byte(s), s>>8
		}
		return out
	}
	cases := 0
	for n := range 12 {
		priv := ed25519.NewKeyFromSeed(random(ed25519.SeedSize))
		pub := priv.Public().(ed25519.PublicKey)
		msg := random(rng.IntN(300))
		sig := ed25519.Sign(priv, msg)
		for _, c := range []struct {
			name          string
			pub, msg, sig []byte
		}{
			{"valid", pub, msg, sig},
			{"message altered", pub, append(append([]byte{}, msg...), byte(n)), sig},
			{"R altered", pub, msg, flip(sig, rng.IntN(32))},
			{"S altered", pub, msg, flip(sig, 32+rng.IntN(31))},
			{"key altered", flip(pub, rng.IntN(32)), msg, sig},
			{"S + L", pub, msg, plusL(sig)},
		} {
			uncached, cached := sqlVerifyBoth(t, pool, c.pub, c.msg, c.sig)
			if want := ed25519.Verify(c.pub, c.msg, c.sig); uncached != want || cached != want {
				t.Errorf("key %d, %s: SQL %v (table computed) and %v (table read), Go %v", n, c.name, uncached, cached, want)
			}
			cases++
		}
	}
	if cases != 72 {
		t.Fatalf("%d cases, want 72", cases)
	}
}
