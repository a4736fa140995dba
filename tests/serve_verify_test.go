package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest/kits"
	"github.com/pginbox/pginbox/runner"
)

// signatureHeaders are the signature headers of every kind.
var signatureHeaders = []string{"X-Sume-Signature", "Stripe-Signature", "X-Hub-Signature-256", "Webhook-Signature", "X-Shopify-Hmac-Sha256",
	"X-Slack-Signature", "Linear-Signature", "X-Square-Hmacsha256-Signature", "Paddle-Signature"}

// TestServeVerification: for every provider kind, over real HTTP, a valid
// delivery is stored and every forged, stale or malformed one is rejected
// with its status and writes no row.
func TestServeVerification(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	providers := map[string][2]string{}
	for _, kit := range kits.All() {
		providers[kit.Kind] = [2]string{kit.Kind, kit.Secrets[0] + "," + kit.Secrets[1]}
	}
	srv := startServer(t, conf.URL(), runner.Config{}, providers)
	client := &http.Client{Timeout: 10 * time.Second}
	now := time.Now()

	type tc struct {
		name       string
		kind       string
		mutate     func(kind string, h http.Header, body *string, secret *string, at *time.Time)
		wantStatus int
		wantReason string
	}
	var cases []tc
	for _, kit := range kits.All() {
		kind := kit.Kind
		// Linear's timestamp is in the body: TestServeSlackLinearSquare tests it.
		timed := kind == "sume" || kind == "stripe" || kind == "standardwebhooks" || kind == "slack" || kind == "paddle"
		cases = append(cases,
			tc{name: "valid", kind: kind, wantStatus: 200},
			tc{name: "second of two secrets", kind: kind, wantStatus: 200,
				mutate: func(k string, _ http.Header, _ *string, s *string, _ *time.Time) { *s = kitOf(k).Secrets[1] }},
			tc{name: "wrong secret", kind: kind, wantStatus: 401, wantReason: "signature mismatch",
				mutate: func(_ string, _ http.Header, _ *string, s *string, _ *time.Time) { *s = "not-the-secret" }},
			tc{name: "tampered body", kind: kind, wantStatus: 401, wantReason: "signature mismatch"},
			tc{name: "missing signature", kind: kind, wantStatus: 401, wantReason: "signature missing"},
			tc{name: "malformed signature", kind: kind, wantStatus: 401, wantReason: "signature malformed"},
		)
		if timed {
			cases = append(cases,
				tc{name: "stale timestamp", kind: kind, wantStatus: 401, wantReason: "timestamp out of tolerance",
					mutate: func(_ string, _ http.Header, _ *string, _ *string, at *time.Time) { *at = now.Add(-6 * time.Minute) }},
				tc{name: "future timestamp", kind: kind, wantStatus: 401, wantReason: "timestamp out of tolerance",
					mutate: func(_ string, _ http.Header, _ *string, _ *string, at *time.Time) { *at = now.Add(6 * time.Minute) }},
			)
		}
	}
	for i, c := range cases {
		key := "evt_" + c.kind + "_" + strings.ReplaceAll(c.name, " ", "_")
		kit := kitOf(c.kind)
		secret := kit.Secrets[0]
		at := now
		body := kit.Body(key)
		if c.mutate != nil {
			c.mutate(c.kind, nil, &body, &secret, &at)
		}
		h := kit.Sign(secret, body, key, at)
		switch c.name {
		case "tampered body":
			body = strings.Replace(body, "{", `{"extra": 1, `, 1)
		case "missing signature":
			for _, k := range signatureHeaders {
				h.Del(k)
			}
		case "malformed signature":
			for _, k := range signatureHeaders {
				if h.Get(k) != "" {
					h.Set(k, "%%%garbage%%%")
				}
			}
		}
		status, out := post(t, client, srv.Base+"/webhooks/"+c.kind, h, []byte(body))
		if status != c.wantStatus {
			t.Errorf("#%d %s/%s: status %d %v, want %d", i, c.kind, c.name, status, out, c.wantStatus)
			continue
		}
		rows := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1 AND external_id = $2`, c.kind, key)
		if c.wantStatus == 200 {
			if out["outcome"] != "created" || rows != 1 {
				t.Errorf("%s/%s: %v, %d rows", c.kind, c.name, out, rows)
			}
			continue
		}
		if out["error"] != c.wantReason {
			t.Errorf("%s/%s: error %q, want %q", c.kind, c.name, out["error"], c.wantReason)
		}
		if rows != 0 {
			t.Errorf("%s/%s: a rejected delivery wrote %d rows", c.kind, c.name, rows)
		}
	}
	valid := int64(2 * len(kits.All()))
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != valid {
		t.Fatalf("rows %d, want exactly the %d valid deliveries", n, valid)
	}
}
