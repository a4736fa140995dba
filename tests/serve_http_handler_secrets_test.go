package tests

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestServeHTTPHandlerLastErrorHasNoSecrets: an http: handler whose URL
// carries userinfo and a ?token= fails (nothing listens there); what the
// runner records in last_error and webhooks.event_errors, which reader
// roles and the console read, names the URL without either. A handler
// that redirects to another origin never gets the event sent there.
func TestServeHTTPHandlerLastErrorHasNoSecrets(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	const secret = "tok3nSENTINELq9"
	h, err := runner.ParseHandler("http:http://hookuser:pw"+secret+"@"+closed+"/in?token="+secret, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 1, PollInterval: 100 * time.Millisecond}, sumeOnly)
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('sume', 'leak-1', 'job.completed', '{}')`)
	waitFor(t, 15*time.Second, "the failed attempt", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.event_errors`) >= 1
	})
	var lastError, recorded string
	if err := pool.QueryRow(t.Context(), `SELECT coalesce(e.last_error, ''), (SELECT string_agg(error, ' | ') FROM webhooks.event_errors)
		FROM webhooks.events e WHERE external_id = 'leak-1'`).Scan(&lastError, &recorded); err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"last_error": lastError, "event_errors": recorded} {
		if strings.Contains(text, "SENTINEL") || strings.Contains(text, "hookuser") {
			t.Errorf("%s holds a credential: %s", what, text)
		}
		if !strings.Contains(text, closed+"/in") {
			t.Errorf("%s no longer names the URL: %s", what, text)
		}
	}

	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stolen.Add(1) }))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	h2, err := runner.ParseHandler("http:"+redirecting.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conf2 := NewConfig(t)
	pool2 := PoolFor(t, conf2.URL(), 4)
	startServer(t, conf2.URL(), runner.Config{Handler: h2, Workers: 1, PollInterval: 100 * time.Millisecond}, sumeOnly)
	execSQL(t, pool2, `SELECT webhooks.ingest_webhook('sume', 'redirected', 'job.completed', '{}')`)
	waitFor(t, 15*time.Second, "the redirected attempt to fail", func() bool {
		return queryInt(t, pool2, `SELECT count(*) FROM webhooks.events WHERE last_error LIKE '%307 Temporary Redirect%'`) == 1
	})
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the event was POSTed %d times to the origin the redirect named", n)
	}
}
