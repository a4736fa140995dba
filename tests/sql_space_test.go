package tests

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// spaceClassFile holds the one copy of the white-space class under sql/src,
// webhooks._space_class, which the verifiers, _signature_bounds and
// _valid_text read.
const spaceClassFile = "sql/src/verify/_space_class.sql"

// TestSQLSpaceIsGoSpace checks the white-space class of the SQL against Go's
// unicode.IsSpace, which the runner's strings.TrimSpace and strings.Fields
// use: a class missing a space (or holding one more) would make SQL and Go
// split or trim a header differently. The class is written once, in
// webhooks._space_class: the test fails when another file under sql/src
// spells it (or its less common code points) again, when that one copy is
// not exactly the set unicode.IsSpace accepts, and when the function of a
// migrated database, read by Postgres's own regular expressions over every
// code point, matches another set.
func TestSQLSpaceIsGoSpace(t *testing.T) {
	t.Parallel()
	var want []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.IsSpace(r) {
			want = append(want, r)
		}
	}
	// The class as written in an E'' string: \\t ... \\u3000, ending at the
	// first character that cannot be part of it.
	classRe := regexp.MustCompile(`\\\\t\\\\n[^'\]]*`)
	// Code points of the class no other text has a reason to name.
	copyRe := regexp.MustCompile(`(?i)\\\\u(0085|00a0|1680|2028|3000)`)
	copies := 0
	for _, s := range loadSQLSources(t).Sources {
		if s.Path != spaceClassFile {
			if m := copyRe.FindString(s.Text); m != "" {
				t.Errorf("%s spells the white-space class (%s): use webhooks._space_class() instead", s.Path, m)
			}
			continue
		}
		for _, class := range classRe.FindAllString(s.Text, -1) {
			copies++
			got, err := parseRegexClass(strings.ReplaceAll(class, `\\`, `\`))
			if err != nil {
				t.Errorf("%s: %q: %v", s.Path, class, err)
				continue
			}
			if string(got) != string(want) {
				t.Errorf("%s: the white-space class %q holds %q, Go's unicode.IsSpace %q", s.Path, class, string(got), string(want))
			}
		}
	}
	if copies != 1 {
		t.Fatalf("found %d copies of the white-space class in %s, want 1: the pattern no longer finds it", copies, spaceClassFile)
	}

	// What Postgres makes of it: every code point but U+0000 and the
	// surrogates (which chr() refuses), against the migrated function.
	pool := NewPool(t, 1)
	var got []int32
	if err := pool.QueryRow(context.Background(), `
		SELECT array_agg(i ORDER BY i) FROM generate_series(1, 1114111) AS i
		WHERE (i < 55296 OR i > 57343) AND chr(i) ~ ('^[' || webhooks._space_class() || ']$')`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("webhooks._space_class() matches %q in Postgres, Go's unicode.IsSpace %q", string(got), string(want))
	}
}

// parseRegexClass returns the sorted runes of the inside of a Postgres
// regular-expression bracket expression made of \t \n \v \f \r, \uXXXX,
// literal characters and ranges a-b.
func parseRegexClass(s string) ([]rune, error) {
	var items []rune
	var ranges [][2]rune
	rs := []rune(s)
	next := func(i int) (rune, int, error) {
		if rs[i] != '\\' {
			return rs[i], i + 1, nil
		}
		if i+1 >= len(rs) {
			return 0, 0, strconv.ErrSyntax
		}
		switch rs[i+1] {
		case 't':
			return '\t', i + 2, nil
		case 'n':
			return '\n', i + 2, nil
		case 'v':
			return '\v', i + 2, nil
		case 'f':
			return '\f', i + 2, nil
		case 'r':
			return '\r', i + 2, nil
		case 'u':
			if i+6 > len(rs) {
				return 0, 0, strconv.ErrSyntax
			}
			n, err := strconv.ParseUint(string(rs[i+2:i+6]), 16, 32)
			return rune(n), i + 6, err
		}
		return 0, 0, strconv.ErrSyntax
	}
	for i := 0; i < len(rs); {
		lo, j, err := next(i)
		if err != nil {
			return nil, err
		}
		i = j
		if i < len(rs) && rs[i] == '-' && i+1 < len(rs) {
			hi, j, err := next(i + 1)
			if err != nil {
				return nil, err
			}
			ranges = append(ranges, [2]rune{lo, hi})
			i = j
			continue
		}
		items = append(items, lo)
	}
	var out []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		in := false
		for _, x := range items {
			in = in || x == r
		}
		for _, g := range ranges {
			in = in || (g[0] <= r && r <= g[1])
		}
		if in {
			out = append(out, r)
		}
	}
	return out, nil
}
