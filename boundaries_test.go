package pginbox

import (
	"slices"
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
		{pkg: "internal/metrics", forbidden: []string{"internal/backfill", "internal/console"}, required: []string{"internal/status"}},
		{pkg: "internal/cli", required: []string{"internal/status"}},
		{pkg: "internal/ingest", forbidden: []string{"runner/..."}, required: []string{"internal/provider/sig"}},
		{pkg: "internal/status", forbidden: []string{"internal/backfill/...", "internal/metrics", "internal/console", "internal/provider/...", "runner/..."}},
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
