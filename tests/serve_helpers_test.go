package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// testServer is a pginbox runner serving on a loopback port.
type testServer struct {
	Srv    *runner.Server
	Base   string
	cancel context.CancelFunc
	done   chan error
}

// startServer runs runner.New + Run against dbURL until the test ends.
// Providers: name=kind with secrets; the schedules are off unless set.
func startServer(t *testing.T, dbURL string, cfg runner.Config, providers map[string][2]string) *testServer {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = -1
	}
	if cfg.ChecksEvery == 0 {
		cfg.ChecksEvery = -1
	}
	if cfg.Providers == nil {
		cfg.Providers = map[string]verify.Provider{}
	}
	for name, ks := range providers {
		p, err := verify.New(ks[0], strings.Split(ks[1], ","))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Providers[name] = p
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := runner.New(context.Background(), cfg, dbURL, log)
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Run(ctx) }()
	ts.Base = "http://" + srv.Addr().String()
	t.Cleanup(func() { ts.Stop(t) })
	return ts
}

// Stop shuts the server down gracefully (idempotent).
func (s *testServer) Stop(t *testing.T) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("server: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("server did not shut down within 60s")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// post sends a delivery and returns the status and decoded JSON body.
func post(t *testing.T, client *http.Client, url string, h http.Header, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if _, ok := req.Header["Content-Type"]; !ok {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %d with a body that is not JSON: %q", url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// signSume builds Sume's headers from its published recipe.
var signSume = testsign.Sume

// signer signs body with secret at a time for one provider kind and key.
type signer func(secret, body, key string, at time.Time) http.Header

// signers sign a delivery of each kind, with the headers carrying its key and
// event type.
var signers = map[string]signer{
	"sume":   func(secret, body, _ string, at time.Time) http.Header { return testsign.Sume(secret, body, at) },
	"stripe": func(secret, body, _ string, at time.Time) http.Header { return testsign.Stripe(secret, body, at) },
	"github": func(secret, body, key string, _ time.Time) http.Header {
		h := testsign.GitHub(secret, body)
		h.Set("X-Github-Delivery", key)
		h.Set("X-Github-Event", "issues")
		return h
	},
	"standardwebhooks": func(secret, body, key string, at time.Time) http.Header {
		h, err := testsign.StandardWebhooks(secret, key, body, at)
		if err != nil {
			panic(err) // the secrets of secretsFor are valid
		}
		return h
	},
	"shopify": func(secret, body, key string, _ time.Time) http.Header {
		h := testsign.Shopify(secret, body)
		h.Set("X-Shopify-Event-Id", key)
		h.Set("X-Shopify-Topic", "orders/create")
		return h
	},
}

// sampleBody is a delivery of each kind whose idempotency key is key.
func sampleBody(kind, key string) string {
	switch kind {
	case "sume":
		return fmt.Sprintf(`{"job_id": %q, "event": "job.completed", "status": "COMPLETED"}`, key)
	case "stripe":
		return fmt.Sprintf(`{"id": %q, "type": "invoice.paid", "object": "event"}`, key)
	case "github":
		return `{"action": "opened", "issue": {"number": 1}}`
	case "standardwebhooks":
		return `{"type": "user.created", "data": {"id": 1}}`
	default:
		return `{"id": 1, "total": "10.00"}`
	}
}

// secretsFor are two valid secrets per kind (rotation).
var secretsFor = map[string][2]string{
	"sume":             {"sume-secret-old", "sume-secret-new"},
	"stripe":           {"whsec_stripe_old", "whsec_stripe_new"},
	"github":           {"gh-old", "gh-new"},
	"standardwebhooks": {"whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-old-key")), "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-new-key"))},
	"shopify":          {"shpss_old", "shpss_new"},
}
