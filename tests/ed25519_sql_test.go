package tests

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"testing"
)

// TestEd25519SQLRFC8032: webhooks._ed25519_verify (Ed25519 in plpgsql,
// behind ingest_signed's v1a) accepts the signatures of RFC 8032 section
// 7.1, tests 1 to 3 and SHA(abc), and refuses each with its message, key or
// signature altered, as Go's crypto/ed25519 does.
func TestEd25519SQLRFC8032(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	vectors := []struct{ name, pub, msg, sig string }{
		{"test 1", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"test 2", "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"test 3", "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
		{"test SHA(abc)", "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
			"dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"},
	}
	check := func(name string, pub, msg, sig []byte) {
		t.Helper()
		var got bool
		if err := pool.QueryRow(context.Background(), `SELECT webhooks._ed25519_verify($1, $2, $3)`, pub, msg, sig).Scan(&got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig); got != want {
			t.Errorf("%s: SQL %v, Go %v", name, got, want)
		}
	}
	flip := func(b []byte, i int) []byte {
		out := append([]byte{}, b...)
		out[i] ^= 1
		return out
	}
	for _, v := range vectors {
		pub, _ := hex.DecodeString(v.pub)
		msg, _ := hex.DecodeString(v.msg)
		sig, _ := hex.DecodeString(v.sig)
		if !ed25519.Verify(pub, msg, sig) {
			t.Fatalf("%s: the vector is mistyped", v.name)
		}
		check(v.name, pub, msg, sig)
		check(v.name+", message altered", pub, append(append([]byte{}, msg...), 0), sig)
		check(v.name+", R altered", pub, msg, flip(sig, 0))
		check(v.name+", S altered", pub, msg, flip(sig, 40))
		check(v.name+", key altered", flip(pub, 1), msg, sig)
		check(v.name+", signature truncated", pub, msg, sig[:63])
	}
}
