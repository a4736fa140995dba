package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
)

// The providers' own libraries, from npm at the versions pinned by each
// tests/testdata/providerlibs/<kind>/package-lock.json, each run by a small
// script there (check.js or check.mjs) that prints which deliveries the
// library accepts:
//
//	slack   @slack/events-api  verifyRequestSignature
//	linear  @linear/sdk        LinearWebhookClient.parseVerifiedPayload (signature and webhookTimestamp)
//	square  square             WebhooksHelper.verifySignature
//
// These libraries verify and do not sign, so the deliveries are signed by
// internal/testsign (the signer of every other test and of the shared
// vectors): the provider's code accepting them, and refusing a tampered one,
// shows that our reading of each scheme is the provider's.

// libDelivery is one delivery handed to a library's check script.
type libDelivery struct {
	Secret  string            `json:"secret"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

var (
	libMu   sync.Mutex
	libDone = map[string]error{}
)

// needProviderLib returns node and the folder of kind's library, installed
// with npm ci (once per test binary, when node_modules is missing), or
// skips t when node or the npm registry is unavailable.
func needProviderLib(t *testing.T, kind string) (node, dir string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if err := aptInstall("nodejs", "npm"); err != nil {
			t.Skipf("the %s library test needs node and npm: not on PATH, and installing them failed: %v", kind, err)
		}
		if node, errNode = exec.LookPath("node"); errNode != nil {
			t.Skipf("the %s library test needs node: %v", kind, errNode)
		}
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "providerlibs", kind))
	if err != nil {
		t.Fatal(err)
	}
	libMu.Lock()
	defer libMu.Unlock()
	err, done := libDone[dir]
	if !done {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); statErr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error")
			if out, runErr := cmd.CombinedOutput(); runErr != nil {
				err = fmt.Errorf("%v: %s", runErr, lastLines(out, 10))
			}
		}
		libDone[dir] = err
	}
	if err != nil {
		t.Skipf("%s: npm ci failed (is the npm registry reachable?): %v", dir, err)
	}
	return node, dir
}

// libAccepts runs kind's check script on ds and returns, per delivery,
// whether the provider's library accepts it.
func libAccepts(t *testing.T, kind string, ds []libDelivery) []bool {
	t.Helper()
	node, dir := needProviderLib(t, kind)
	script := "check.js"
	if _, err := os.Stat(filepath.Join(dir, "check.mjs")); err == nil {
		script = "check.mjs"
	}
	in, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s/%s: %v: %s", kind, script, err, stderr.String())
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(ds) {
		t.Fatalf("%s/%s printed %q, want %d booleans", kind, script, out, len(ds))
	}
	return got
}

// lowerHeaders returns h's first values under lower-case names, as Node's
// http module hands headers to these libraries.
func lowerHeaders(h http.Header) map[string]string {
	m := map[string]string{}
	for name, v := range h {
		m[strings.ToLower(name)] = v[0]
	}
	return m
}

// TestProviderLibrariesAgree: for slack, linear and square, deliveries
// signed by internal/testsign are accepted by the provider's own npm
// library and stored by pginbox over HTTP; the same delivery tampered with,
// or signed with another secret (square: for another URL), is refused by
// both, pginbox answering 401 with the reason.
func TestProviderLibrariesAgree(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const slackSecret, linearSecret, squareKey = "slack-lib-signing-0123", "lin_wh_lib_secret_0123", "sq-lib-signature-key-0123"
	srv := startServer(t, conf.URL(), runner.Config{}, map[string][2]string{
		"slack":  {"slack", slackSecret},
		"linear": {"linear", linearSecret},
		"square": {"square", squareKey},
	})
	client := &http.Client{Timeout: 10 * time.Second}

	type delivery struct {
		name   string
		sign   func(body string) http.Header
		body   string // what is sent (the tampered case sends another body than it signed)
		accept bool
	}
	now := time.Now()
	slackBody := `{"token":"t","team_id":"T1","type":"event_callback","event_id":"EvLIB1","event":{"type":"app_mention","text":"hi"}}`
	linearBody := fmt.Sprintf(`{"action":"create","type":"Issue","data":{"id":"lib-1"},"webhookTimestamp":%d}`, now.UnixMilli())
	squareBody := `{"merchant_id":"M1","type":"payment.updated","event_id":"sq-lib-1","data":{"type":"payment"}}`
	tamper := func(body string) string { return strings.Replace(body, "{", `{"x":1,`, 1) }
	kinds := []struct {
		kind, secret, url string
		cases             []delivery
	}{
		{"slack", slackSecret, "", []delivery{
			{"signed", func(b string) http.Header { return testsign.Slack(slackSecret, b, now) }, slackBody, true},
			{"tampered", func(b string) http.Header { return testsign.Slack(slackSecret, slackBody, now) }, tamper(slackBody), false},
			{"another secret", func(b string) http.Header { return testsign.Slack("slack-other-secret-0123", b, now) }, slackBody, false},
		}},
		{"linear", linearSecret, "", []delivery{
			{"signed", func(b string) http.Header { return testsign.Linear(linearSecret, "lin-lib-1", b) }, linearBody, true},
			{"tampered", func(b string) http.Header { return testsign.Linear(linearSecret, "lin-lib-2", linearBody) }, tamper(linearBody), false},
			{"another secret", func(b string) http.Header { return testsign.Linear("lin_wh_other_secret_0123", "lin-lib-3", b) }, linearBody, false},
		}},
		{"square", squareKey, squareURL, []delivery{
			{"signed", func(b string) http.Header { return testsign.Square(squareKey, squareURL, b) }, squareBody, true},
			{"tampered", func(b string) http.Header { return testsign.Square(squareKey, squareURL, squareBody) }, tamper(squareBody), false},
			{"another secret", func(b string) http.Header { return testsign.Square("sq-other-signature-key", squareURL, b) }, squareBody, false},
			{"another URL", func(b string) http.Header { return testsign.Square(squareKey, srv.Base+"/webhooks/square", b) }, squareBody, false},
		}},
	}
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			var ds []libDelivery
			var want []bool
			headers := make([]http.Header, len(k.cases))
			for i, c := range k.cases {
				headers[i] = c.sign(c.body)
				ds = append(ds, libDelivery{Secret: k.secret, URL: k.url, Headers: lowerHeaders(headers[i]), Body: c.body})
				want = append(want, c.accept)
			}
			if got := libAccepts(t, k.kind, ds); !slices.Equal(got, want) {
				t.Fatalf("the %s library accepts %v of %d deliveries, want %v", k.kind, got, len(ds), want)
			}
			for i, c := range k.cases {
				status, out := post(t, client, srv.Base+"/webhooks/"+k.kind, headers[i], []byte(c.body))
				switch {
				case c.accept && (status != 200 || out["outcome"] != "created"):
					t.Errorf("%s: pginbox answered %d %v, want 200 created", c.name, status, out)
				case !c.accept && (status != 401 || out["error"] != "signature mismatch"):
					t.Errorf("%s: pginbox answered %d %v, want 401 signature mismatch", c.name, status, out)
				}
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, k.kind); n != 1 {
				t.Errorf("%d events stored, want the one signed delivery", n)
			}
		})
	}
}
