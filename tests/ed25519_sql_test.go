package tests

import (
	"context"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/testsign"
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

// edwards25519 in math/big, affine, for the tests only: an implementation
// independent of the SQL one (and of Go's), to build the points and
// signatures the edge cases need. Go's crypto/ed25519.Verify then says what
// the answer is.
var (
	edP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	edL = func() *big.Int {
		l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
		return l
	}()
	edD = func() *big.Int {
		d := new(big.Int).ModInverse(big.NewInt(121666), edP)
		d.Mul(d, big.NewInt(-121665))
		return d.Mod(d, edP)
	}()
	edB = edDecode(mustHex("5866666666666666666666666666666666666666666666666666666666666666"))
)

type edPoint struct{ x, y *big.Int }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func edMod(x *big.Int) *big.Int { return x.Mod(x, edP) }

// edAdd is the complete affine addition of -x^2 + y^2 = 1 + d x^2 y^2.
func edAdd(a, b edPoint) edPoint {
	x1y2 := new(big.Int).Mul(a.x, b.y)
	y1x2 := new(big.Int).Mul(a.y, b.x)
	y1y2 := new(big.Int).Mul(a.y, b.y)
	x1x2 := new(big.Int).Mul(a.x, b.x)
	t := edMod(new(big.Int).Mul(edD, edMod(new(big.Int).Mul(x1x2, y1y2))))
	dx := new(big.Int).ModInverse(edMod(new(big.Int).Add(big.NewInt(1), t)), edP)
	dy := new(big.Int).ModInverse(edMod(new(big.Int).Sub(big.NewInt(1), t)), edP)
	return edPoint{
		edMod(new(big.Int).Mul(edMod(new(big.Int).Add(x1y2, y1x2)), dx)),
		edMod(new(big.Int).Mul(edMod(new(big.Int).Add(y1y2, x1x2)), dy)),
	}
}

func edNeg(a edPoint) edPoint { return edPoint{edMod(new(big.Int).Neg(a.x)), new(big.Int).Set(a.y)} }

// edMul returns [k]a, k >= 0.
func edMul(k *big.Int, a edPoint) edPoint {
	r := edPoint{big.NewInt(0), big.NewInt(1)}
	for i := k.BitLen() - 1; i >= 0; i-- {
		r = edAdd(r, r)
		if k.Bit(i) == 1 {
			r = edAdd(r, a)
		}
	}
	return r
}

func edEqual(a, b edPoint) bool { return a.x.Cmp(b.x) == 0 && a.y.Cmp(b.y) == 0 }

// edEncode is RFC 8032's encoding: y little-endian, the low bit of x on top.
func edEncode(a edPoint) []byte {
	out := make([]byte, 32)
	a.y.FillBytes(out)
	slices.Reverse(out)
	out[31] |= byte(a.x.Bit(0)) << 7
	return out
}

// edDecode decodes as Go's crypto/ed25519 does (y modulo p, x = 0 whatever
// its sign bit); x nil when it is not a point.
func edDecode(b []byte) edPoint {
	le := slices.Clone(b)
	sign := le[31] >> 7
	le[31] &= 127
	slices.Reverse(le)
	y := edMod(new(big.Int).SetBytes(le))
	y2 := edMod(new(big.Int).Mul(y, y))
	u := edMod(new(big.Int).Sub(y2, big.NewInt(1)))
	v := edMod(new(big.Int).Add(edMod(new(big.Int).Mul(edD, y2)), big.NewInt(1)))
	x2 := edMod(new(big.Int).Mul(u, new(big.Int).ModInverse(v, edP)))
	x := new(big.Int).ModSqrt(x2, edP)
	if x == nil {
		return edPoint{nil, y}
	}
	if x.Bit(0) != uint(sign) {
		edMod(x.Neg(x))
	}
	return edPoint{x, y}
}

// edScalar returns the little-endian 32 bytes of s.
func edScalar(s *big.Int) []byte {
	out := make([]byte, 32)
	s.FillBytes(out)
	slices.Reverse(out)
	return out
}

// edK is SHA-512(R || A || msg) modulo L.
func edK(r, pub, msg []byte) *big.Int {
	h := sha512.Sum512(slices.Concat(r, pub, msg))
	slices.Reverse(h[:])
	return new(big.Int).Mod(new(big.Int).SetBytes(h[:]), edL)
}

// sqlVerifyBoth returns _ed25519_verify's answer without and then with the
// key's multiples in webhooks.ed25519_key_tables (computed on the fly, then
// read), and removes the row again.
func sqlVerifyBoth(t *testing.T, pool *pgxpool.Pool, pub, msg, sig []byte) (uncached, cached bool) {
	t.Helper()
	ctx := context.Background()
	if err := pool.QueryRow(ctx, `SELECT webhooks._ed25519_verify($1, $2, $3)`, pub, msg, sig).Scan(&uncached); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var rows int64
	if err := tx.QueryRow(ctx, `
		WITH ins AS (
		    INSERT INTO webhooks.ed25519_key_tables (pub, tab)
		    SELECT $1::bytea, webhooks._ed25519_table($1::bytea)
		    WHERE octet_length($1::bytea) = 32
		    ON CONFLICT (pub) DO NOTHING RETURNING 1)
		SELECT count(*) FROM ins`, pub).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT webhooks._ed25519_verify($1, $2, $3)`, pub, msg, sig).Scan(&cached); err != nil {
		t.Fatal(err)
	}
	return uncached, cached
}

// TestEd25519SQLBaseTable: the constant webhooks._ed25519_base_table is
// webhooks._ed25519_table of the base point, and [S]B from it is Go's: with
// the neutral element as the key ([k]A = 0 whatever k), a signature R || S
// verifies exactly when R encodes [S]B, which the test computes in math/big
// for S random, 0, 1, L - 1 and S whose 4-bit digits are all 8 or all 15
// (each carried into the next signed digit), and Go's crypto/ed25519 agrees.
func TestEd25519SQLBaseTable(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	var same bool
	if err := pool.QueryRow(ctx, `SELECT webhooks._ed25519_base_table() = webhooks._ed25519_table($1)`,
		mustHex("5866666666666666666666666666666666666666666666666666666666666666")).Scan(&same); err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Error("_ed25519_base_table() is not _ed25519_table of B")
	}
	identity := edEncode(edPoint{big.NewInt(0), big.NewInt(1)})
	rng := mrand.New(mrand.NewPCG(8032, 25519))
	eights, _ := new(big.Int).SetString(strings.Repeat("8", 63), 16)
	fifteens, _ := new(big.Int).SetString(strings.Repeat("f", 63), 16)
	scalars := []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(edL, big.NewInt(1)), eights, fifteens}
	for range 16 {
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		scalars = append(scalars, new(big.Int).Mod(new(big.Int).SetBytes(b), edL))
	}
	for _, s := range scalars {
		r := edEncode(edMul(s, edB))
		sig := slices.Concat(r, edScalar(s))
		if !ed25519.Verify(identity, []byte("base"), sig) {
			t.Fatalf("S = %x: Go refuses R = [S]B with the neutral key: the test's arithmetic is wrong", s)
		}
		for _, c := range []struct {
			name string
			sig  []byte
		}{{"R = [S]B", sig}, {"R + 1", slices.Concat(edEncode(edAdd(edMul(s, edB), edB)), edScalar(s))}} {
			want := ed25519.Verify(identity, []byte("base"), c.sig)
			uncached, cached := sqlVerifyBoth(t, pool, identity, []byte("base"), c.sig)
			if uncached != want || cached != want {
				t.Errorf("S = %x, %s: SQL %v (table computed) and %v (table read), Go %v", s, c.name, uncached, cached, want)
			}
		}
	}
}

// TestEd25519SQLEdgeCases: _ed25519_verify agrees with Go's crypto/ed25519
// on keys of small order (the 8 points of the torsion subgroup), keys with a
// torsion component ([a]B + T), non-canonical key encodings (y >= p, x = 0
// with the sign bit set), keys that are not points, S = 0, S >= L and a
// non-canonical R (y >= p, or x = 0 with the sign bit set), on signatures
// built to verify under each key and on altered ones, with the key's table
// computed on the fly and read from webhooks.ed25519_key_tables.
func TestEd25519SQLEdgeCases(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	rng := mrand.New(mrand.NewPCG(19, 255))
	randScalar := func() *big.Int {
		b := make([]byte, 40)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return new(big.Int).Mod(new(big.Int).SetBytes(b), edL)
	}
	// T8, a point of order 8.
	t8 := edDecode(mustHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"))
	if t8.x == nil || !edEqual(edMul(big.NewInt(8), t8), edPoint{big.NewInt(0), big.NewInt(1)}) {
		t.Fatal("T8 is not of order 8")
	}
	type key struct {
		name string
		pub  []byte
		a    *big.Int // A = [a]B + tor (a nil: not built that way)
		tor  edPoint
	}
	var keys []key
	for i := range 8 {
		tor := edMul(big.NewInt(int64(i)), t8)
		keys = append(keys, key{fmt.Sprintf("[%d]T8", i), edEncode(tor), big.NewInt(0), tor})
	}
	for _, i := range []int64{1, 2, 4} {
		a, tor := randScalar(), edMul(big.NewInt(i), t8)
		keys = append(keys, key{fmt.Sprintf("[a]B + [%d]T8", i), edEncode(edAdd(edMul(a, edB), tor)), a, tor})
	}
	nonCanonical := func(v int64, sign byte) []byte {
		b := edScalar(new(big.Int).Add(edP, big.NewInt(v)))
		b[31] |= sign << 7
		return b
	}
	keys = append(keys,
		key{"y = p + 1 (the neutral element)", nonCanonical(1, 0), big.NewInt(0), edPoint{big.NewInt(0), big.NewInt(1)}},
		key{"y = p (order 4)", nonCanonical(0, 0), nil, edPoint{}},
		key{"y = p, x odd (order 4)", nonCanonical(0, 1), nil, edPoint{}},
		key{"neutral, sign bit set", mustHex("0100000000000000000000000000000000000000000000000000000000000080"), big.NewInt(0), edPoint{big.NewInt(0), big.NewInt(1)}},
		key{"(0, -1), sign bit set", mustHex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"), nil, edPoint{}},
		key{"y = 2, not a point", edScalar(big.NewInt(2)), nil, edPoint{}},
		key{"y = p + 2, not a point", nonCanonical(2, 0), nil, edPoint{}},
	)
	checked, valid := 0, 0
	for _, k := range keys {
		A := edDecode(k.pub)
		var sigs []struct {
			name string
			msg  []byte
			sig  []byte
		}
		add := func(name string, msg, sig []byte) {
			sigs = append(sigs, struct {
				name string
				msg  []byte
				sig  []byte
			}{name, msg, sig})
		}
		if k.a != nil && A.x != nil {
			// R = [r]B - [m]T, S = r + k a: valid when [k]T = [m]T, which
			// one guess of m in eight hits.
			for try := 0; try < 200; try++ {
				msg := fmt.Appendf(nil, "edge %d", try)
				r, m := randScalar(), big.NewInt(int64(rng.IntN(8)))
				R := edEncode(edAdd(edMul(r, edB), edNeg(edMul(m, k.tor))))
				kk := edK(R, k.pub, msg)
				if !edEqual(edMul(kk, k.tor), edMul(m, k.tor)) {
					continue
				}
				s := new(big.Int).Mod(new(big.Int).Add(r, new(big.Int).Mul(kk, k.a)), edL)
				sig := slices.Concat(R, edScalar(s))
				add("built to verify", msg, sig)
				add("S + L", msg, slices.Concat(R, edScalar(new(big.Int).Add(s, edL))))
				bad := slices.Clone(sig)
				bad[rng.IntN(32)] ^= 1 << rng.UintN(8)
				add("R altered", msg, bad)
				add("message altered", append(msg, '!'), sig)
				break
			}
			if len(sigs) == 0 {
				t.Fatalf("%s: no signature found to verify", k.name)
			}
		}
		// S = 0 and R the neutral element: [0]B - [k]A = -[k]A, the
		// neutral element when A's order divides k; and the same with R
		// encoded non-canonically (y = p + 1).
		zero := make([]byte, 32)
		add("S = 0, R neutral", []byte("zero"), slices.Concat(edEncode(edPoint{big.NewInt(0), big.NewInt(1)}), zero))
		add("S = 0, R neutral non-canonical", []byte("zero"), slices.Concat(nonCanonical(1, 0), zero))
		add("S = 0, R neutral with the sign bit set", []byte("zero"),
			slices.Concat(mustHex("0100000000000000000000000000000000000000000000000000000000000080"), zero))
		random := make([]byte, 64)
		for i := range random {
			random[i] = byte(rng.UintN(256))
		}
		random[63] &= 15
		add("random", []byte("random"), random)
		for _, s := range sigs {
			want := ed25519.Verify(k.pub, s.msg, s.sig)
			if s.name == "built to verify" && !want {
				t.Fatalf("%s, %s: Go refuses it: the test's arithmetic is wrong", k.name, s.name)
			}
			uncached, cached := sqlVerifyBoth(t, pool, k.pub, s.msg, s.sig)
			if uncached != want || cached != want {
				t.Errorf("%s, %s: SQL %v (table computed) and %v (table read), Go %v", k.name, s.name, uncached, cached, want)
			}
			checked++
			if want {
				valid++
			}
		}
	}
	if checked < 60 || valid < 12 {
		t.Fatalf("%d cases of which %d valid: the edge cases were not built", checked, valid)
	}
}

// TestEd25519KeyTablesFollowProviders: webhooks.ed25519_key_tables holds one
// row per whpk_ key of a standardwebhooks provider, its table as
// _ed25519_table computes it (NULL for a key that is not a point), from the
// statement that stores the key (set_provider) to the one that removes its
// last use (set_provider without it, drop_provider); a secret of another
// kind gets none. _ed25519_verify reads it: a row replaced by another key's
// table makes a valid signature fail.
func TestEd25519KeyTablesFollowProviders(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	seeded := func(b byte) ed25519.PrivateKey {
		seed := make([]byte, ed25519.SeedSize)
		seed[0] = b
		return ed25519.NewKeyFromSeed(seed)
	}
	k1, k2 := seeded(1), seeded(2)
	notPoint := "whpk_" + base64.StdEncoding.EncodeToString(edScalar(big.NewInt(2)))
	pubOf := func(k ed25519.PrivateKey) string { return hex.EncodeToString(k.Public().(ed25519.PublicKey)) }
	// rows returns the keys with a row (hex, sorted) and whether every
	// row's table is the one _ed25519_table computes.
	rows := func() (keys []string, right bool) {
		t.Helper()
		right = true
		r, err := pool.Query(ctx, `
			SELECT encode(pub, 'hex'), tab IS NOT DISTINCT FROM webhooks._ed25519_table(pub)
			FROM webhooks.ed25519_key_tables ORDER BY pub`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var k string
			var ok bool
			if err := r.Scan(&k, &ok); err != nil {
				t.Fatal(err)
			}
			keys, right = append(keys, k), right && ok
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return keys, right
	}
	notPointHex := hex.EncodeToString(edScalar(big.NewInt(2)))
	steps := []struct {
		name string
		sql  string
		args []any
		want []string
	}{
		{"a with two whpk_ keys and a whsec_", `SELECT webhooks.set_provider('a', 'standardwebhooks', $1)`,
			[]any{[]string{testsign.Whpk(k1), testsign.Whpk(k2), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
			[]string{pubOf(k1), pubOf(k2)}},
		{"b with the second key", `SELECT webhooks.set_provider('b', 'standardwebhooks', $1)`,
			[]any{[]string{testsign.Whpk(k2)}}, []string{pubOf(k1), pubOf(k2)}},
		{"a rotated to a key that is not a point", `SELECT webhooks.set_provider('a', 'standardwebhooks', $1)`,
			[]any{[]string{notPoint}}, []string{notPointHex, pubOf(k2)}},
		{"a sume secret that reads like a whpk_ key", `SELECT webhooks.set_provider('c', 'sume', $1)`,
			[]any{[]string{testsign.Whpk(k1)}}, []string{notPointHex, pubOf(k2)}},
		{"b dropped", `SELECT webhooks.drop_provider('b')`, nil, []string{notPointHex}},
		{"a dropped", `SELECT webhooks.drop_provider('a')`, nil, nil},
	}
	for _, s := range steps {
		if _, err := pool.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, right := rows()
		slices.Sort(s.want)
		if !slices.Equal(got, s.want) || !right {
			t.Errorf("%s: rows for %v (tables right: %v), want %v", s.name, got, right, s.want)
		}
	}

	if _, err := pool.Exec(ctx, `SELECT webhooks.set_provider('a', 'standardwebhooks', $1)`, []string{testsign.Whpk(k1)}); err != nil {
		t.Fatal(err)
	}
	msg := []byte("read from the table")
	sig := ed25519.Sign(k1, msg)
	verify := func() bool {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT webhooks._ed25519_verify($1, $2, $3)`, []byte(k1.Public().(ed25519.PublicKey)), msg, sig).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !verify() {
		t.Fatal("a valid signature of a configured key is refused")
	}
	if _, err := pool.Exec(ctx, `UPDATE webhooks.ed25519_key_tables SET tab = webhooks._ed25519_table($1) WHERE pub = $2`,
		[]byte(k2.Public().(ed25519.PublicKey)), []byte(k1.Public().(ed25519.PublicKey))); err != nil {
		t.Fatal(err)
	}
	if verify() {
		t.Error("with the table of another key in its row, the signature still verifies: _ed25519_verify did not read the row")
	}
}

// TestEd25519KeyTablesBackfilled: the migration that creates
// webhooks.ed25519_key_tables fills it with the whpk_ keys stored before it
// (of standardwebhooks providers only), so an upgraded database never
// computes a key's multiples during a delivery.
func TestEd25519KeyTablesBackfilled(t *testing.T) {
	t.Parallel()
	db, _ := emptyDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	p := migrateToBefore(t, db, "CREATE TABLE webhooks.ed25519_key_tables")
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 9
	key := ed25519.NewKeyFromSeed(seed)
	for _, q := range []struct {
		provider, kind string
		secrets        []string
	}{
		{"a", "standardwebhooks", []string{testsign.Whpk(key), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		{"b", "standardwebhooks", []string{testsign.Whpk(key)}},
		{"c", "sume", []string{"whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 32))}},
	} {
		if _, err := db.ExecContext(ctx, `SELECT webhooks.set_provider($1, $2, $3)`, q.provider, q.kind, q.secrets); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	var keys []byte
	var n int
	var right bool
	if err := db.QueryRowContext(ctx, `
		SELECT count(*), (array_agg(pub ORDER BY pub))[1], coalesce(bool_and(tab = webhooks._ed25519_table(pub)), false)
		FROM webhooks.ed25519_key_tables`).Scan(&n, &keys, &right); err != nil {
		t.Fatal(err)
	}
	if n != 1 || !slices.Equal(keys, key.Public().(ed25519.PublicKey)) || !right {
		t.Errorf("after the upgrade: %d rows, the first for %x (table right: %v), want one for %x", n, keys, right, []byte(key.Public().(ed25519.PublicKey)))
	}
}
