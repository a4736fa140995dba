package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// swDir holds the Node program that verifies with the official Standard
// Webhooks library (package standardwebhooks, locked in package-lock.json).
const swDir = "testdata/standardwebhooks"

var (
	swOnce sync.Once
	swErr  error
)

// needStandardWebhooks returns node with tests/testdata/standardwebhooks's
// locked dependencies installed (npm ci when missing), or skips t when node,
// npm or the registry are out of reach.
func needStandardWebhooks(t *testing.T) string {
	t.Helper()
	node, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if err := aptInstall("nodejs", "npm"); err != nil {
			t.Skipf("the Standard Webhooks check needs node and npm: not on PATH, and installing them failed: %v", err)
		}
		if node, errNode = exec.LookPath("node"); errNode != nil {
			t.Skipf("the Standard Webhooks check needs node: %v", errNode)
		}
	}
	swOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(swDir, "node_modules", "standardwebhooks", "package.json")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--prefix", swDir, "--no-audit", "--no-fund", "--loglevel=error")
		if out, err := cmd.CombinedOutput(); err != nil {
			swErr = fmt.Errorf("%v: %s", err, lastLines(out, 10))
		}
	})
	if swErr != nil {
		t.Skipf("%s: npm ci failed (is the npm registry reachable?): %v", swDir, swErr)
	}
	return node
}

// verifyWithStandardWebhooks runs verify.js on one message: the verified
// payload, or the library's error.
func verifyWithStandardWebhooks(t *testing.T, node, secret string, headers map[string]string, body []byte) (string, error) {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(body)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(swDir, "verify.js"))
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return string(out), nil
}

// TestAlertSignatureVerifiesWithStandardWebhooks: an alert POST a runner
// signs with PGINBOX_ALERT_SECRET verifies with the official Standard
// Webhooks library, and the same library refuses it with the body changed
// or under another secret.
func TestAlertSignatureVerifiesWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	node := needStandardWebhooks(t)
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	rcv := newAlertReceiver(t, nil)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour,
		AlertURL: rcv.URL, AlertSecret: alertSecret}, sumeOnly)
	waitFor(t, 30*time.Second, "the firing POST", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) >= 1
	})
	_, got := rcv.got("dead_events_24h", "firing")
	p := got[0]
	headers := map[string]string{}
	for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		headers[h] = p.Header.Get(h)
	}

	out, err := verifyWithStandardWebhooks(t, node, alertSecret, headers, p.Body)
	if err != nil {
		t.Fatalf("standardwebhooks refused the alert: %v\nheaders %v\nbody %s", err, headers, p.Body)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil || payload["check"] != "dead_events_24h" || payload["status"] != "firing" {
		t.Fatalf("verified payload %s (%v)", out, err)
	}

	tampered := bytes.Replace(p.Body, []byte(`"firing"`), []byte(`"resolved"`), 1)
	if _, err := verifyWithStandardWebhooks(t, node, alertSecret, headers, tampered); err == nil {
		t.Fatal("standardwebhooks accepted a changed body")
	}
	if _, err := verifyWithStandardWebhooks(t, node, "whsec_"+strings.Repeat("A", 43)+"=", headers, p.Body); err == nil {
		t.Fatal("standardwebhooks accepted the alert under another secret")
	}
}
