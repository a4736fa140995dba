package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMakeHelpShowsNoMakeSyntax: `make help` prints each target's `##`
// text as it stands, so a `$(VAR)` there reached the reader literally.
func TestMakeHelpShowsNoMakeSyntax(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("make", "-s", "--no-print-directory", "-C", "..", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("make help printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if strings.Contains(l, "$(") || strings.Contains(l, "${") {
			t.Errorf("make help shows make syntax: %s", l)
		}
	}
}
