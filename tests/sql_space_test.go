package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestSQLSpaceIsGoSpace checks every copy of the white-space class in
// sql/src (the c_ws constants of the _verify_<kind> functions and of
// _signature_bounds, and _valid_text's blank test) against Go's
// unicode.IsSpace, which the runner's strings.TrimSpace and strings.Fields
// use: a class missing a space (or holding one more) would make SQL and Go
// split or trim a header differently. Each copy is the same text, and that
// text is exactly the set unicode.IsSpace accepts.
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
	copies := 0
	for _, s := range loadSQLSources(t).Sources {
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
	// _valid_text, _signature_bounds and one per _verify_<kind>.
	if copies < 3 {
		t.Fatalf("found %d copies of the white-space class under sql/src: the pattern no longer finds them", copies)
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
