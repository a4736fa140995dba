package tests

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSecretsNeverLeak runs `pginbox serve` at debug log level through valid,
// forged and malformed deliveries, a bad admin token and a scrape of every
// endpoint, and greps everything it said for the secrets.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	const sumeSecret2 = "sume-secret-do-not-print-1"
	const ghSecret = "github-secret-do-not-print-2"
	const admin = "admin-token-do-not-print-3"
	p := startRunner(t, map[string]string{
		"DATABASE_URL":        conf.URL(),
		"PGINBOX_PROVIDERS":   "sume=sume,gh=github",
		"PGINBOX_SECRET_SUME": sumeSecret2 + ",second-sume-secret-do-not-print-4",
		"PGINBOX_SECRET_GH":   ghSecret,
		"PGINBOX_ADMIN_TOKEN": admin,
		"PGINBOX_HANDLER":     "none",
		"PGINBOX_LOG_LEVEL":   "debug",
	})
	client := &http.Client{Timeout: 10 * time.Second}
	var said strings.Builder
	body := sampleBody("sume", "job_leak")
	for _, h := range []http.Header{
		signSume(sumeSecret2, body, time.Now()),                 // valid
		signSume("wrong", body, time.Now()),                     // forged
		signSume(sumeSecret2, body, time.Now().Add(-time.Hour)), // stale
		{"X-Sume-Signature": {"v1=" + sumeSecret2}},             // a secret pasted as a signature
	} {
		status, out := post(t, client, p.Base+"/webhooks/sume", h, []byte(body))
		fmt.Fprintf(&said, "--- %d %v\n", status, out)
	}
	ghBody := sampleBody("github", "")
	status, _ := post(t, client, p.Base+"/webhooks/gh", kitOf("github").Sign("nope", ghBody, "d-1", time.Now()), []byte(ghBody))
	if status != 401 {
		t.Fatalf("forged github delivery: %d", status)
	}
	req, _ := http.NewRequest(http.MethodPost, p.Admin+"/api/events/replay", strings.NewReader(`{"ids": [1], "reason": "x"}`))
	req.Header.Set("Authorization", "Bearer wrong-token-guess")
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
	req, _ = http.NewRequest(http.MethodGet, p.Admin+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	if resp, err := client.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		said.Write(b)
	}
	for _, path := range []string{"/metrics", "/api/status", "/", "/readyz", "/healthz", "/login"} {
		said.WriteString(httpGet(t, p.Admin+path))
	}
	if err := p.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	said.WriteString(p.Logs())
	all := said.String()
	if !strings.Contains(all, "signature mismatch") || !strings.Contains(all, "pginbox serving") {
		t.Fatalf("the run did not produce the expected logs:\n%s", p.Logs())
	}
	for _, s := range []string{sumeSecret2, "second-sume-secret-do-not-print-4", ghSecret, admin, "do-not-print"} {
		if strings.Contains(all, s) {
			t.Errorf("a secret (%q) appears in the logs, metrics or status", s)
		}
	}
}
