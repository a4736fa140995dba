package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestMain stops the throwaway Postgres cluster the harness may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// runCLI runs one command line with env as the whole environment and
// returns the exit code, stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), App{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}, args)
	return code, out.String(), errOut.String()
}
