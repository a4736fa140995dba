package tests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider"
	"github.com/pginbox/pginbox/internal/provider/providertest/kits"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

// kindParts finds, for each part a provider kind consists of (the checklist
// of docs/providers/README.md), the kinds that have it. Every part must hold
// exactly the kinds of the list of kinds: a kind missing a part, or a part
// left behind by a kind no longer listed, fails TestEveryKindIsComplete.
func kindParts(t *testing.T, root string, tableKinds []string) (names []string, parts map[string][]string) {
	t.Helper()
	parts = map[string][]string{}
	glob := func(part, pattern string, kind func(path string) string) {
		names = append(names, part)
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if k := kind(p); k != "" {
				parts[part] = append(parts[part], k)
			}
		}
	}
	base := func(prefix, suffix string, skip ...string) func(string) string {
		return func(p string) string {
			name := filepath.Base(p)
			if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) || slices.Contains(skip, name) {
				return ""
			}
			return strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix)
		}
	}
	// Go: the kind's folder with its verifier, and its test kit.
	glob("Go verifier internal/provider/<kind>/verify.go", "internal/provider/*/verify.go",
		func(p string) string { return filepath.Base(filepath.Dir(p)) })
	glob("Go test kit internal/provider/<kind>/<kind>test/kit.go", "internal/provider/*/*test/kit.go", func(p string) string {
		kind := filepath.Base(filepath.Dir(filepath.Dir(p)))
		if filepath.Base(filepath.Dir(p)) != kind+"test" {
			return ""
		}
		return kind
	})
	names = append(names, "a kit in internal/provider/providertest/kits")
	for _, k := range kits.All() {
		parts["a kit in internal/provider/providertest/kits"] = append(parts["a kit in internal/provider/providertest/kits"], k.Kind)
	}
	// SQL: its two functions, a branch in each dispatcher and in the
	// header bounds, and its row.
	glob("sql/src/verify/_verify_<kind>.sql", "sql/src/verify/_verify_*.sql", base("_verify_", ".sql", "_verify_signature.sql"))
	glob("sql/src/ingest/_identify_<kind>.sql", "sql/src/ingest/_identify_*.sql", base("_identify_", ".sql"))
	branches := func(part, file string, re *regexp.Regexp) {
		names = append(names, part)
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			parts[part] = append(parts[part], m[1])
		}
	}
	branches("a branch of _verify_signature calling _verify_<kind>", "sql/src/verify/_verify_signature.sql",
		regexp.MustCompile(`(?m)^\s*WHEN '(\w+)'\s+THEN RETURN webhooks\._verify_(?:\w+)\(`))
	branches("a branch of _identify calling _identify_<kind>", "sql/src/ingest/_identify.sql",
		regexp.MustCompile(`(?m)^\s*WHEN '(\w+)'\s+THEN v_found := webhooks\._identify_(?:\w+)\(`))
	branches("a header in _signature_bounds", "sql/src/verify/_signature_bounds.sql",
		regexp.MustCompile(`(?m)^\s*WHEN '(\w+)'\s+THEN 'x?-?[a-z0-9-]+'$`))
	names = append(names, "a row of webhooks.provider_kinds")
	parts["a row of webhooks.provider_kinds"] = tableKinds
	// Tests and docs: its vectors and their generator, its page and its
	// row in the table of providers.
	glob("tests/testdata/vectors/<kind>.json", "tests/testdata/vectors/*.json", base("", ".json"))
	glob("tests/cmd/genvectors/<kind>.go", "tests/cmd/genvectors/*.go", base("", ".go", "main.go", "bounds.go", "standardwebhooks_v1a.go"))
	glob("docs/providers/<kind>.md", "docs/providers/*.md", base("", ".md", "README.md"))
	branches("a row in docs/providers/README.md", "docs/providers/README.md",
		regexp.MustCompile("(?m)^\\| `(\\w+)` \\| \\[\\w+\\.md\\]"))
	for part := range parts {
		slices.Sort(parts[part])
	}
	return names, parts
}

// TestEveryKindIsComplete checks that every provider kind of the list of
// kinds (internal/provider/kinds.go) has each of its parts, the checklist of
// docs/providers/README.md, and that no part names a kind the list does not
// hold; then that each kind's test kit signs a delivery both verifiers
// accept: the Go one (runner/verify) with either secret, and
// webhooks.ingest_signed, which stores it under the kit's key and type, with
// the body's digest exactly when Go's Identify says the key is not signed.
func TestEveryKindIsComplete(t *testing.T) {
	t.Parallel()
	kinds := provider.Names()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	var tableKinds []string
	rows, err := pool.Query(ctx, `SELECT kind FROM webhooks.provider_kinds`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		tableKinds = append(tableKinds, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	names, parts := kindParts(t, "..", tableKinds)
	for _, part := range names {
		have := parts[part]
		for _, k := range kinds {
			if !slices.Contains(have, k) {
				t.Errorf("kind %s lacks %s", k, part)
			}
		}
		for _, k := range have {
			if !slices.Contains(kinds, k) {
				t.Errorf("%s: %s is not a kind of internal/provider/kinds.go", part, k)
			}
		}
		if len(slices.Compact(slices.Clone(have))) != len(have) {
			t.Errorf("%s: a kind twice: %q", part, have)
		}
	}

	now := time.Now()
	for _, kit := range kits.All() {
		if !slices.Contains(kinds, kit.Kind) {
			continue // reported above
		}
		t.Run(kit.Kind, func(t *testing.T) {
			key := "kit-" + kit.Kind + "-1"
			body := kit.Body(key)
			keySigned := false
			for _, secret := range kit.Secrets {
				p, err := verify.NewWithURL(kit.Kind, kit.Secrets[:], kit.URL)
				if err != nil {
					t.Fatalf("verify.NewWithURL(%s) with the kit's secrets: %v", kit.Kind, err)
				}
				h := kit.Sign(secret, body, key, now)
				if err := p.Verify(h, []byte(body), now); err != nil {
					t.Fatalf("Go: the kit's delivery signed with %q: %v", secret, err)
				}
				d, err := p.Identify(h, []byte(body))
				if err != nil || d.ExternalID != key || d.EventType != kit.EventType {
					t.Fatalf("Go: Identify = (%q, %q, %v), want (%q, %q)", d.ExternalID, d.EventType, err, key, kit.EventType)
				}
				keySigned = d.KeySigned
			}
			name := "complete-" + kit.Kind
			var url *string
			if kit.URL != "" {
				url = &kit.URL
			}
			execSQL(t, pool, `SELECT webhooks.set_provider($1, $2, $3, $4)`, name, kit.Kind, kit.Secrets[:], url)
			var outcome string
			if err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_signed($1, $2::jsonb, $3)`,
				name, testsign.JSON(kit.Sign(kit.Secrets[1], body, key, time.Now())), []byte(body)).Scan(&outcome); err != nil {
				t.Fatalf("SQL: ingest_signed of the kit's delivery: %v", err)
			}
			var id, typ string
			var digest bool
			if err := pool.QueryRow(ctx, `SELECT external_id, event_type, body_sha256 IS NOT NULL FROM webhooks.events WHERE provider = $1`,
				name).Scan(&id, &typ, &digest); err != nil {
				t.Fatalf("SQL: the stored event (outcome %s): %v", outcome, err)
			}
			if id != key || typ != kit.EventType {
				t.Errorf("SQL: stored (%q, %q), want (%q, %q)", id, typ, key, kit.EventType)
			}
			// _identify_<kind>'s unsigned_key decides the digest; Go's KeySigned
			// is the same answer.
			if digest == keySigned {
				t.Errorf("SQL: stored with the body's digest %v, but Go's Identify says KeySigned %v: "+
					"_identify_%s's unsigned_key disagrees with the Go verifier", digest, keySigned, kit.Kind)
			}
		})
	}
}
