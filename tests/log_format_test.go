package tests

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
)

// TestServeLogLinesAreJSON starts the real `pginbox serve` with settings
// that warn at start (a stripe API key without its URL, an API key where
// the signing secret belongs, an unused PGINBOX_API_KEY for a second
// provider, a GitHub App key file readable by others) and stops it with
// SIGTERM, then reads every line it wrote to stderr and to stdout: each one
// must be a JSON object with time, level and msg, the configuration's
// warnings included. The backfill warnings used to go through slog.Default,
// plain-text lines ("2026/12/07 … WARN backfill: PGINBOX_API_KEY_STRIPE is
// set but …").
func TestServeLogLinesAreJSON(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	bin := pginboxBinary(t)
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "gh.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, admin := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+conf.URL(),
		"PGINBOX_ADDR="+addr,
		"PGINBOX_ADMIN_ADDR="+admin,
		"PGINBOX_LOG_LEVEL=debug",
		"PGINBOX_PROVIDERS=stripe=stripe,sume=sume,gh=github",
		"PGINBOX_SECRET_GH="+strings.Repeat("g", 32),
		"PGINBOX_API_URL_GH=http://127.0.0.1:9",
		"PGINBOX_GITHUB_APP_ID_GH=77",
		"PGINBOX_API_KEY_GH="+keyFile,
		"PGINBOX_SECRET_STRIPE=sk_test_not_a_signing_secret",
		"PGINBOX_API_KEY_STRIPE=sk_test_api_key",
		"PGINBOX_SECRET_SUME="+sumeSecret,
		"PGINBOX_API_KEY_SUME=sume-api-key",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
	})
	waitFor(t, 30*time.Second, "pginbox serve ready", func() bool {
		select {
		case err := <-done:
			t.Fatalf("pginbox serve exited early (%v):\n%s%s", err, stderr.String(), stdout.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pginbox serve after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("pginbox serve still running 30s after SIGTERM:\n%s", stderr.String())
	}

	var msgs []string
	for name, out := range map[string]string{"stderr": stderr.String(), "stdout": stdout.String()} {
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			var rec map[string]any
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("%s line %d is not a JSON object (%v): %s", name, n, err, sc.Text())
				continue
			}
			for _, k := range []string{"time", "level", "msg"} {
				if _, ok := rec[k].(string); !ok {
					t.Errorf("%s line %d has no string %q: %s", name, n, k, sc.Text())
				}
			}
			msg, _ := rec["msg"].(string)
			msgs = append(msgs, fmt.Sprint(rec["level"], " ", msg))
		}
	}
	// The warnings this configuration causes, each as a JSON record: the
	// test reads the lines it means to.
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"WARN backfill: PGINBOX_API_KEY_STRIPE is set but PGINBOX_API_URL_STRIPE is not",
		"WARN backfill: PGINBOX_API_KEY_SUME is set but PGINBOX_API_URL_SUME is not",
		"WARN PGINBOX_SECRET_STRIPE: a stripe secret does not start with whsec_",
		"WARN backfill: PGINBOX_API_KEY_GH: ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no JSON record %q among:\n%s", want, all)
		}
	}
	for _, want := range []string{"INFO pginbox serving", "INFO shutting down"} {
		if !strings.Contains(all, want) {
			t.Errorf("no JSON record %q among:\n%s", want, all)
		}
	}
}

// freeAddr is a free 127.0.0.1 port as host:port.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := localpg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}
