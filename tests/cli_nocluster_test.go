package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/localpg"
)

// cliEnv is the environment with none of the variables that name a
// database, plus extra ("K=V").
func cliEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DATABASE_URL", "PGINBOX_DATA_DIR", "PGINBOX_DIRECT_URL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runIn runs the pginbox binary with args in folder dir and returns its exit
// code, stdout and stderr.
func runIn(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(pginboxBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run pginbox %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// openFolder is a fresh folder the server's user can enter (the binaries run
// as "postgres" when the tests run as root).
func openFolder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pginbox-folder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCommandsCreateNoCluster: with DATABASE_URL unset, in a folder where
// pginbox serve never ran, every command that reads the database exits 1
// with one line naming the data folder and the ways to point at a database
// (DATABASE_URL, --data-dir, pginbox serve), and leaves no cluster behind;
// so does PGINBOX_DATA_DIR or --data-dir naming a folder without one.
// version prints the binary's version and creates nothing either.
func TestCommandsCreateNoCluster(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		env   []string
		args  []string
		where string // the data folder, relative to the working folder
	}{
		{"checks", nil, []string{"checks"}, ".pginbox"},
		{"ordering", nil, []string{"ordering"}, ".pginbox"},
		{"reconcile", nil, []string{"reconcile"}, ".pginbox"},
		{"gaps", nil, []string{"gaps"}, ".pginbox"},
		{"replay", nil, []string{"replay", "1", "--reason", "test"}, ".pginbox"},
		{"prune", nil, []string{"prune"}, ".pginbox"},
		{"PGINBOX_DATA_DIR", []string{"PGINBOX_DATA_DIR=elsewhere/db"}, []string{"ordering"}, "elsewhere/db"},
		{"--data-dir", nil, []string{"checks", "--data-dir", "elsewhere/db"}, "elsewhere/db"},
		{"prune --data-dir", nil, []string{"prune", "--data-dir", "elsewhere/db"}, "elsewhere/db"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := openFolder(t)
			code, out, errOut := runIn(t, dir, cliEnv(tc.env...), tc.args...)
			want := filepath.Join(dir, tc.where)
			if code != 1 {
				t.Errorf("exit %d, want 1\nstdout %q\nstderr %q", code, out, errOut)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			for _, part := range []string{"pginbox: no database:", "no embedded cluster was created in " + want + " ", "DATABASE_URL", "--data-dir", "pginbox serve"} {
				if !strings.Contains(errOut, part) {
					t.Errorf("stderr lacks %q: %q", part, errOut)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("the command left %s in the folder", e.Name())
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		t.Parallel()
		dir := openFolder(t)
		code, out, errOut := runIn(t, dir, cliEnv(), "version")
		if code != 0 || !strings.Contains(out, "embedded migrations:") || strings.Contains(out, "database schema version") {
			t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("version left %s in the folder", entries[0].Name())
		}
	})
}

// TestMigrateCreatesTheEmbeddedCluster: pginbox migrate in an empty folder
// creates the embedded cluster under .pginbox (and stops it again); a
// command that only reads then starts that stopped cluster, in the folder or
// from another one through --data-dir, and creates nothing where it runs.
func TestMigrateCreatesTheEmbeddedCluster(t *testing.T) {
	t.Parallel()
	if _, err := localpg.FindBinDir(); err != nil {
		t.Skip(err)
	}
	dir := openFolder(t)
	code, out, errOut := runIn(t, dir, cliEnv(), "migrate")
	if code != 0 || !strings.Contains(out, "migrated schema webhooks from version 00000 to") {
		t.Fatalf("migrate in an empty folder: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !localpg.Exists(filepath.Join(dir, ".pginbox")) {
		t.Fatal("migrate created no cluster under .pginbox")
	}
	stopped := func(who string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, ".pginbox", "data", "postmaster.pid")); err == nil {
			t.Fatalf("%s left the cluster it started running", who)
		}
	}
	stopped("migrate")
	code, out, errOut = runIn(t, dir, cliEnv(), "ordering", "--json")
	if code != 0 || !strings.Contains(out, `"providers"`) {
		t.Fatalf("ordering on the stopped cluster: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	stopped("ordering")
	other := openFolder(t)
	code, out, errOut = runIn(t, other, cliEnv(), "ordering", "--json", "--data-dir", filepath.Join(dir, ".pginbox"))
	if code != 0 || !strings.Contains(out, `"providers"`) {
		t.Fatalf("ordering --data-dir from another folder: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	stopped("ordering --data-dir")
	if entries, _ := os.ReadDir(other); len(entries) > 0 {
		t.Errorf("ordering --data-dir left %s in the folder it ran in", entries[0].Name())
	}
}
