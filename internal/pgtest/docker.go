package pgtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// startDocker runs the Docker fallback, the command in ./dockerpg (a module
// of its own, so dockertest stays out of pginbox's module graph), with
// `go run`, and reads where its server listens from its first line. The
// container goes when Stop closes the command's stdin, or when this process
// exits and the pipe closes.
func startDocker() (*Throwaway, error) {
	_, file, _, ok := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "dockerpg")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); !ok || err != nil {
		return nil, fmt.Errorf("the Docker fallback needs pginbox's source folder, and %s has no go.mod", dir)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the Docker fallback runs with go run: %w", err)
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("dockerpg: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("dockerpg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dockerpg: %w", err)
	}
	// The line's keys are Throwaway's field names (host, port, user,
	// password, via).
	var s Throwaway
	if err := json.NewDecoder(stdout).Decode(&s); err != nil {
		_ = stdin.Close()
		if werr := cmd.Wait(); werr != nil {
			return nil, fmt.Errorf("%s (go run ./dockerpg: %w)", goRunOutput(&stderr), werr)
		}
		return nil, fmt.Errorf("dockerpg: read its server line: %w", err)
	}
	s.Stop = func(ctx context.Context) error {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%s (go run ./dockerpg: %w)", goRunOutput(&stderr), err)
			}
			return nil
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return fmt.Errorf("dockerpg: stop: %w", ctx.Err())
		}
	}
	return &s, nil
}

// goRunOutput is what a command run with `go run` wrote on stderr, less the
// "exit status N" line go run adds when it fails.
func goRunOutput(stderr *bytes.Buffer) string {
	out := strings.TrimSpace(stderr.String())
	if i := strings.LastIndexByte(out, '\n'); i >= 0 && strings.HasPrefix(out[i+1:], "exit status ") {
		out = strings.TrimSpace(out[:i])
	}
	return out
}
