package cli

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/peterldowns/pgtestdb"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	conf := pgtestdb.Custom(t, pgtest.Server(t), pgtestdb.NoopMigrator{})
	env := map[string]string{"DATABASE_URL": conf.URL()}

	code, out, errOut := runCLI(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "migrated schema webhooks from version 00000 to") {
		t.Fatalf("first migrate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "is up to date") {
		t.Fatalf("second migrate: exit %d, stdout %q", code, out)
	}
	code, out, _ = runCLI(t, env, "version")
	if code != 0 || !strings.Contains(out, "embedded migrations:") || !regexp.MustCompile(`database schema version: \d{5}\n`).MatchString(out) {
		t.Fatalf("version: exit %d, stdout %q", code, out)
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no command", nil, nil, 2, "pginbox: usage: no command"},
		{"unknown command", nil, []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"bad flag", nil, []string{"migrate", "--nope"}, 2, "flag provided but not defined"},
		{"malformed DATABASE_URL", map[string]string{"DATABASE_URL": "postgres://%zz"}, []string{"migrate"}, 1, "pginbox: DATABASE_URL:"},
		{"unreachable database", map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/x?connect_timeout=2"}, []string{"migrate"}, 1, "pginbox: migrate"},
		{"sql-dist without a directory", nil, []string{"sql-dist"}, 2, "sql-dist takes one directory"},
		{"ordering with a bad limit", nil, []string{"ordering", "--limit", "0"}, 2, "--limit must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, tc.env, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.wantCode, errOut)
			}
			first := strings.SplitN(errOut, "\n", 2)[0]
			if !strings.HasPrefix(first, "pginbox: ") || !strings.Contains(first, tc.wantErr) {
				t.Fatalf("first stderr line %q, want a one-line error containing %q", first, tc.wantErr)
			}
		})
	}
}

// TestCommandHelp: every command answers --help and -h with its usage and
// flags on stdout and exit 0, without touching a database or the disk, and
// a flag it does not know with exit 2.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		flags   []string // what the help must mention
	}{
		{"migrate", []string{"usage: pginbox migrate"}},
		{"serve", []string{"-addr", "-providers", "-handler", "-workers", "-lease", "-keep-keys", "-data-dir", "PGINBOX_ADDR"}},
		{"reconcile", []string{"-all"}},
		{"checks", []string{"-json"}},
		{"ordering", []string{"-provider", "-json", "-limit"}},
		{"gaps", []string{"-provider", "-json", "-limit", "-backfill"}},
		{"replay", []string{"<event_id>", "-reason"}},
		{"prune", []string{"-keep-payload", "-keep-keys"}},
		{"import", []string{"FILE.jsonl", "-provider", "-batch", "-data-dir"}},
		{"version", []string{"usage: pginbox version"}},
		{"sql-dist", []string{"sql-dist DIR"}},
	}
	// No database: a command that tried to reach one would fail.
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			for _, help := range []string{"--help", "-h"} {
				code, out, errOut := runCLI(t, env, tc.command, help)
				if code != 0 || errOut != "" {
					t.Fatalf("%s %s: exit %d, stderr %q; want 0 and nothing", tc.command, help, code, errOut)
				}
				for _, want := range append([]string{"usage: pginbox " + tc.command}, tc.flags...) {
					if !strings.Contains(out, want) {
						t.Errorf("%s %s: help does not mention %q:\n%s", tc.command, help, want, out)
					}
				}
			}
			code, _, errOut := runCLI(t, env, tc.command, "--no-such-flag")
			if code != 2 || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") {
				t.Fatalf("%s --no-such-flag: exit %d, stderr %q; want 2", tc.command, code, errOut)
			}
		})
	}
	for _, name := range []string{"--help", "-h"} {
		if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("sql-dist %s left %q behind (stat: %v)", name, name, err)
		}
	}
}
