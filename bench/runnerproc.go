package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/testsign"
)

// benchSecret signs the bench's Sume deliveries; forged ones use another.
var (
	benchSecret  = []byte("bench-sume-secret")
	forgedSecret = []byte("not-the-secret")
)

// runnerProc is a `pginbox serve` process.
type runnerProc struct {
	name string
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port
	log  string
	done chan error
}

// startRunner runs `pginbox serve` with env (plus DATABASE_URL and a free
// loopback address) and waits until it is ready. Variables of the bench's
// own environment that configure pginbox (PGINBOX_*, DATABASE_URL, OTEL_*)
// are not passed on.
func startRunner(ctx context.Context, bin, name, dbURL, logDir string, env map[string]string) (*runnerProc, error) {
	port, err := localpg.FreePort()
	if err != nil {
		return nil, err
	}
	r := &runnerProc{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(logDir, "runner-"+name+".log"), done: make(chan error, 1)}
	logf, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	for _, kv := range os.Environ() {
		// OTEL_*: only the traces scenario exports spans, and says where.
		if strings.HasPrefix(kv, "PGINBOX_") || strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	vars := map[string]string{
		"DATABASE_URL":            dbURL,
		"PGINBOX_ADDR":            fmt.Sprintf("127.0.0.1:%d", port),
		"PGINBOX_MIGRATE":         "false",
		"PGINBOX_ADMIN_ADDR":      "off", // several runners on one host: no operators' listener
		"PGINBOX_RECONCILE_EVERY": "off",
		"PGINBOX_CHECKS_EVERY":    "off",
		"PGINBOX_LOG_LEVEL":       "warn",
	}
	for k, v := range env {
		vars[k] = v
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// The runner dies with the bench, whatever happens to the bench.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	r.cmd = cmd
	go func() { r.done <- cmd.Wait(); logf.Close() }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-r.done:
			r.done <- err
			return nil, fmt.Errorf("runner %s exited at start (%v): %s", name, err, tail(r.log, 10))
		case <-ctx.Done():
			r.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(r.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("runner %s not ready within 60s: %s", name, tail(r.log, 10))
		}
	}
}

func (r *runnerProc) pid() int { return r.cmd.Process.Pid }

// stop sends SIGTERM (a graceful shutdown) and waits, then SIGKILL.
func (r *runnerProc) stop() error {
	if r == nil || r.cmd == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		r.done <- err
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if err != nil {
			return fmt.Errorf("runner %s: %v: %s", r.name, err, tail(r.log, 5))
		}
		return nil
	case <-time.After(45 * time.Second):
		_ = r.cmd.Process.Kill()
		return fmt.Errorf("runner %s did not stop within 45s; killed", r.name)
	}
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// newClient is a keep-alive HTTP client with exactly conns connections.
func newClient(conns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// delivery is the outcome of one POST.
type delivery struct {
	status  int
	outcome string
	start   time.Time
	end     time.Time
	err     error
}

// deliverSume POSTs one Sume job webhook for key to base, freshly signed
// (with the wrong secret when forged).
func deliverSume(ctx context.Context, client *http.Client, base, key string, forged bool) delivery {
	body := sumePayload(key)
	secret := benchSecret
	if forged {
		secret = forgedSecret
	}
	d := delivery{start: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/sume", strings.NewReader(body))
	if err != nil {
		d.err = err
		return d
	}
	req.Header = testsign.Sume(string(secret), body, d.start)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		d.err = err
		d.end = time.Now()
		return d
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d.end = time.Now()
	d.status = resp.StatusCode
	if err != nil {
		d.err = err
		return d
	}
	if d.status == http.StatusOK {
		var out struct {
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(raw), &out); err != nil {
			d.err = fmt.Errorf("200 with a body that is not JSON: %q", raw)
		}
		d.outcome = out.Outcome
	} else if !forged {
		d.err = fmt.Errorf("status %d: %s", d.status, bytes.TrimSpace(raw))
	}
	return d
}

// buildRunner returns the pginbox binary: the given path when it exists,
// else one built now into dir.
func buildRunner(ctx context.Context, path, dir string) (string, error) {
	if path != "" {
		if st, err := os.Stat(path); err == nil && !st.IsDir() {
			return filepath.Abs(path)
		}
	}
	out := filepath.Join(dir, "pginbox")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./runner/cmd/pginbox")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./runner/cmd/pginbox: %w", err)
	}
	return out, nil
}

// postmasterPID finds the postmaster of the server behind a backend pid.
func postmasterPID(backend int) int {
	if backend <= 0 {
		return 0
	}
	// The server may run on another host: only trust a local postgres.
	if cmd, err := os.ReadFile(filepath.Join("/proc", itoa(backend), "cmdline")); err != nil || !strings.Contains(string(cmd), "postgres") {
		return 0
	}
	p := ppid(backend)
	if p <= 1 {
		return 0
	}
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }
