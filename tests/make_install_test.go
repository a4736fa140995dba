package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: the README's way to get the binary from a clone. `make
// install PREFIX=dir` builds bin/pginbox and copies it to dir/bin, where it
// runs, and says so when dir/bin is not on PATH; with dir/bin on PATH, plain
// `pginbox` finds it.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	prefix := t.TempDir()
	repoLock.Lock()
	out, err := exec.Command("make", "--no-print-directory", "-C", "..", "install", "PREFIX="+prefix).CombinedOutput()
	repoLock.Unlock()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(prefix, "bin")
	if !strings.Contains(string(out), bin+" is not on your PATH") {
		t.Fatalf("make install did not say that %s is not on PATH:\n%s", bin, out)
	}
	cmd := exec.Command("sh", "-c", "pginbox version") // found through PATH
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "DATABASE_URL=")
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(got), "pginbox ") || !strings.Contains(string(got), "embedded migrations:") {
		t.Fatalf("pginbox version from %s: %v\n%s", bin, err, got)
	}
	p, err := exec.LookPath(filepath.Join(bin, "pginbox"))
	if err != nil {
		t.Fatalf("installed binary is not executable: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("installed binary: %v", err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary %s has mode %v, want 0755", p, fi.Mode().Perm())
	}
}
