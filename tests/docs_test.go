package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/envconfig"
)

// envToken matches an environment variable name inside a Go string literal.
// A match that ends in "_" is a prefix the code completes at run time
// ("PGINBOX_SECRET_" + name), documented as PGINBOX_SECRET_<NAME>.
var envToken = regexp.MustCompile(`PGINBOX_[A-Z0-9_]+|\bDATABASE_URL\b`)

// TestReferenceDocumentsEveryVariable holds docs/reference.md and the code
// together. The settings table (envconfig.Table) is the source: each of its
// variables has a row in the reference's "The runner and the CLI" table with
// its flag and its default, and that table lists nothing else. Every other
// PGINBOX_* variable (and DATABASE_URL) that a non-test Go file names in a
// string literal (the test harness's, the bench's) is documented in the
// section too, and every variable the section lists is still read.
func TestReferenceDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := documentedRows(string(doc), "### The runner and the CLI")
	if len(rows) < 10 {
		t.Fatalf("found only %d rows in the \"The runner and the CLI\" table of docs/reference.md: is the section renamed?", len(rows))
	}
	inTable := map[string]bool{}
	for _, s := range envconfig.Table {
		if s.Env == "" {
			continue // a Config field only a Go program sets
		}
		inTable[s.Env] = true
		row, ok := rows[s.Env]
		if !ok {
			t.Errorf("docs/reference.md has no row for %s; add one with its default to \"The runner and the CLI\"", s.Env)
			continue
		}
		if flag := "`--" + s.Flag + "`"; s.Flag != "" && !strings.Contains(row.name, flag) {
			t.Errorf("docs/reference.md: the row of %s does not name its flag %s", s.Env, flag)
		} else if s.Flag == "" && strings.Contains(row.name, "--") {
			t.Errorf("docs/reference.md: the row of %s names a flag; it has none", s.Env)
		}
		if s.Default != "" && !strings.Contains(row.def, "`"+s.Default+"`") {
			t.Errorf("docs/reference.md: the default of %s is `%s`; its row says %q", s.Env, s.Default, row.def)
		}
	}
	for v := range rows {
		if !inTable[v] {
			t.Errorf("docs/reference.md lists %s, which the settings table does not declare; remove its row", v)
		}
	}

	// Variables read outside the table: the harness's and the bench's.
	names, prefixes := codeVariables(t, root)
	if len(names) == 0 {
		t.Fatalf("found no PGINBOX_ variables in the Go files under %s: is the walk broken?", root)
	}
	listed := documentedVariables(string(doc))
	var missing []string
	for _, n := range sortedKeys(names) {
		if slices.Contains(listed, n) {
			continue
		}
		covered := false // PGINBOX_SECRET_SUME is an instance of PGINBOX_SECRET_<NAME>
		for p := range prefixes {
			if strings.HasPrefix(n, p) && slices.Contains(listed, p+"<NAME>") {
				covered = true
			}
		}
		if !covered {
			missing = append(missing, n+" (in "+strings.Join(names[n], ", ")+")")
		}
	}
	for _, p := range sortedKeys(prefixes) {
		if !slices.Contains(listed, p+"<NAME>") {
			missing = append(missing, p+"<NAME> (in "+strings.Join(prefixes[p], ", ")+")")
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/reference.md does not document these variables the code reads; declare them in the settings table (or, for tests and bench, add a row to their table):\n  %s",
			strings.Join(missing, "\n  "))
	}
	var stale []string
	for _, v := range listed {
		if _, found := names[v]; found || inTable[v] || !strings.HasPrefix(v, "PGINBOX_") {
			continue
		}
		if p, ok := strings.CutSuffix(v, "<NAME>"); ok {
			if _, found := prefixes[p]; found {
				continue
			}
		}
		stale = append(stale, v)
	}
	if len(stale) > 0 {
		t.Errorf("docs/reference.md lists variables no Go file reads any more; remove their rows:\n  %s", strings.Join(stale, "\n  "))
	}
}

// docRow is one row of a reference table: its first cell (the variable and
// its flag) and its last (the default).
type docRow struct{ name, def string }

// documentedRows returns the rows of the table under heading (up to the
// next heading) by variable.
func documentedRows(doc, heading string) map[string]docRow {
	_, section, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	cellName := regexp.MustCompile("^ *`(PGINBOX_[A-Z0-9_]+(?:<NAME>)?|DATABASE_URL)`")
	rows := map[string]docRow{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		if m := cellName.FindStringSubmatch(cells[1]); m != nil {
			rows[m[1]] = docRow{name: cells[1], def: cells[len(cells)-2]}
		}
	}
	return rows
}

// codeVariables returns the variable names and the prefixes named in string
// literals of the repository's non-test Go files, each with the files (relative
// to root) that name it.
func codeVariables(t *testing.T, root string) (names, prefixes map[string][]string) {
	t.Helper()
	names, prefixes = map[string][]string{}, map[string][]string{}
	add := func(m map[string][]string, k, file string) {
		if !slices.Contains(m[k], file) {
			m[k] = append(m[k], file)
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, v := range envToken.FindAllString(s, -1) {
				if strings.HasSuffix(v, "_") {
					add(prefixes, v, rel)
				} else {
					add(names, v, rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, prefixes
}

// documentedVariables returns the variable names (PGINBOX_*, DATABASE_URL) in
// the first column of the tables of the "Environment variables" section (up
// to the next "## " heading), with <NAME> kept for per-provider variables.
func documentedVariables(doc string) []string {
	_, section, ok := strings.Cut(doc, "\n## Environment variables\n")
	if !ok {
		return nil
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	cellName := regexp.MustCompile("`(PGINBOX_[A-Z0-9_]+(?:<NAME>)?|DATABASE_URL)`")
	var vars []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		for _, m := range cellName.FindAllStringSubmatch(cells[1], -1) {
			if !slices.Contains(vars, m[1]) {
				vars = append(vars, m[1])
			}
		}
	}
	return vars
}

// repoRoot is the folder of the go.mod above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(mod), "module github.com/pginbox/pginbox\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("no go.mod of github.com/pginbox/pginbox above %s", file)
		}
	}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
