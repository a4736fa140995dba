package pginbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCodeMapNamesEveryPackage keeps docs/architecture.md's code map true:
// every folder of the repository that holds Go code, and every folder of
// canonical SQL sources, is named there (in backticks, as `path` or
// `path/`). A package added, moved or renamed without its line in the map
// fails here.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := codeDirs(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d code folders (%v): the walk is broken", len(dirs), dirs)
	}
	for _, d := range dirs {
		if !strings.Contains(string(doc), "`"+d+"`") && !strings.Contains(string(doc), "`"+d+"/`") {
			t.Errorf("docs/architecture.md does not name `%s`: add it to the code map with its one-line job", d)
		}
	}
}

// codeDirs lists, relative to root, the folders that hold .go files and
// the folders under sql/src that hold .sql files, leaving out hidden
// folders, testdata, node_modules and build output.
func codeDirs(root string) ([]string, error) {
	set := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "dist" || name == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		switch {
		case strings.HasSuffix(name, ".go"):
			set[dir] = true
		case strings.HasSuffix(name, ".sql") && strings.HasPrefix(dir, "sql/src/"):
			set[dir] = true
		}
		return nil
	})
	dirs := make([]string, 0, len(set))
	for d := range set {
		if d != "." {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	return dirs, err
}
