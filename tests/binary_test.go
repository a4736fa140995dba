package tests

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// pginboxBinary builds bin/pginbox once per test binary.
func pginboxBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pginbox-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "pginbox")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/pginbox/pginbox/runner/cmd/pginbox").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runnerProc is a `pginbox serve` subprocess.
type runnerProc struct {
	cmd  *exec.Cmd
	Base string
	done chan struct{}
	mu   sync.Mutex
	log  []string
}

// startRunner starts `pginbox serve` with env on a free port and waits until
// /readyz answers 200.
func startRunner(t *testing.T, env map[string]string) *runnerProc {
	t.Helper()
	addr := env["PGINBOX_ADDR"]
	if addr == "" {
		port, err := localpg.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	cmd := exec.Command(pginboxBinary(t), "serve")
	cmd.Env = append(os.Environ(), "PGINBOX_ADDR="+addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &runnerProc{cmd: cmd, Base: "http://" + addr, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.Base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("pginbox serve exited early:\n%s", p.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pginbox serve not ready after 30s:\n%s", p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Logs returns what the process wrote to stderr.
func (p *runnerProc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// Kill sends SIGKILL and waits for the process to go.
func (p *runnerProc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Terminate sends SIGTERM and waits up to timeout for a graceful exit.
func (p *runnerProc) Terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("exit code %d", code)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("still running after %v", timeout)
	}
}
