package pginbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBoundaries holds the import edges that keep each part to its job
// (the non-test imports, from go list):
//
//   - the operators' surfaces (console, metrics, CLI) read the queue, the
//     gaps and the ordering through internal/status, and the console
//     imports neither backfill (which acts on gaps) nor the metrics
//     registry nor the root package (whose only business is migrations);
//   - the console's parts below it (auth: who may use the listener; filter:
//     the event list's filter and its SQL; format: how figures are written)
//     import no package of pginbox, neither the console above them nor
//     the database's readers;
//   - internal/ingest verifies through internal/provider/sig, not through
//     runner/verify, the public facade made for programs outside.
func TestBoundaries(t *testing.T) {
	t.Parallel()
	pkgs := repoPackages(t)
	for _, tc := range []struct {
		pkg       string
		forbidden []string // these; "p/..." is p and every package below it
		required  []string
	}{
		{pkg: "internal/console", forbidden: []string{"pginbox", "internal/backfill/...", "internal/metrics", "runner/..."},
			required: []string{"internal/status"}},
		{pkg: "internal/console/auth", forbidden: []string{"pginbox", "internal/...", "runner/..."}},
		{pkg: "internal/console/filter", forbidden: []string{"pginbox", "internal/...", "runner/..."}},
		{pkg: "internal/console/format", forbidden: []string{"pginbox", "internal/...", "runner/..."}},
		{pkg: "internal/metrics", forbidden: []string{"internal/backfill", "internal/console"}, required: []string{"internal/status"}},
		{pkg: "internal/cli", required: []string{"internal/status"}},
		{pkg: "internal/ingest", forbidden: []string{"runner/..."}, required: []string{"internal/provider/sig"}},
		{pkg: "internal/status", forbidden: []string{"internal/backfill/...", "internal/metrics", "internal/console/...", "internal/provider/...", "runner/..."}},
	} {
		p := pkgs[tc.pkg]
		if p == nil {
			t.Errorf("no package %s", tc.pkg)
			continue
		}
		for _, imp := range p.imports {
			for _, f := range tc.forbidden {
				tree, below := strings.CutSuffix(f, "/...")
				if imp == tree || below && strings.HasPrefix(imp, tree+"/") {
					t.Errorf("%s imports %s: keep it off %s", tc.pkg, imp, f)
				}
			}
		}
		for _, r := range tc.required {
			if !slices.Contains(p.imports, r) {
				t.Errorf("%s does not import %s (imports %v)", tc.pkg, r, p.imports)
			}
		}
	}
}

// TestBackfillNamesNoVariable: backfill works on a provider's API settings
// (a URL, a key) whoever gave them; which variable or field they came from,
// and the messages that name it, are the configuration's (internal/envconfig
// and the runner's Config). No string in its non-test files names a
// PGINBOX_ variable.
func TestBackfillNamesNoVariable(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("internal/backfill/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		read++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "PGINBOX_") {
				t.Errorf("%s: %q names a variable: compose that message in internal/envconfig", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if read < 5 {
		t.Fatalf("read only %d files of internal/backfill", read)
	}
}
