package pginbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines bounds a package of the program: its non-test Go files
// together. Past it a package holds more than one job; split it (as
// internal/console is split into console, console/auth and console/filter).
const maxPackageLines = 2500

// TestPackagesStaySmall: every package of the program (the root package,
// pginboxtype, runner and internal, not the bench, the tests or the tools)
// has at most maxPackageLines lines of non-test Go.
func TestPackagesStaySmall(t *testing.T) {
	t.Parallel()
	checked := 0
	for name, p := range repoPackages(t) {
		if !programPackage(name) {
			continue
		}
		files, err := filepath.Glob(filepath.Join(p.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines += bytes.Count(b, []byte("\n"))
		}
		if lines > maxPackageLines {
			t.Errorf("%s has %d lines of non-test Go, more than %d: split it along a seam that gives each part one job", name, lines, maxPackageLines)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages: is go list broken?", checked)
	}
}

// programPackage reports whether the package named name (as repoPackages
// names them) is part of the program: what a runner or the binary runs.
func programPackage(name string) bool {
	switch {
	case name == "pginbox", name == "pginboxtype", name == "runner", strings.HasPrefix(name, "runner/"):
		return true
	case strings.HasPrefix(name, "internal/"):
		return true
	}
	return false
}
