package tests

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestHalfOpenListener: the listener's connection goes half-open (a proxy
// stops forwarding without closing). Wake-ups keep flowing through the poll
// backstop, and the listener notices its own ping is lost and reconnects.
func TestHalfOpenListener(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	proxy := pgtest.StartFreezeProxy(t, conf.Host+":"+conf.Port)
	listenURL, _ := url.Parse(conf.URL())
	listenURL.Host = proxy.Addr()
	h, seen := recordingHandler()
	srv := startServer(t, conf.URL(), runner.Config{
		Handler: h, Workers: 2, PollInterval: 500 * time.Millisecond,
		DirectURL: listenURL.String(), ListenPing: 500 * time.Millisecond,
		SkipMigrate: true, // the direct URL would carry the migration: only the listener goes through the proxy
	}, sumeOnly)
	connects := func() int {
		resp, err := http.Get(srv.Admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^pginbox_listener_connects_total (\d+)`).FindSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	waitFor(t, 10*time.Second, "the listener to connect through the proxy", func() bool { return connects() == 1 })

	if n := proxy.Freeze(); n != 1 {
		t.Fatalf("froze %d proxied connections, want the listener's one", n)
	}
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'during', 't', '{}', notify => true)`)
	waitFor(t, 10*time.Second, "the poll backstop to process work while the listener is half-open", func() bool { return seen("during") })
	waitFor(t, 15*time.Second, "the listener to be replaced", func() bool { return connects() >= 2 })
	execSQL(t, pool, `SELECT webhooks.ingest_webhook('p', 'after', 't', '{}', notify => true)`)
	waitFor(t, 10*time.Second, "work after the replacement", func() bool { return seen("after") })
}
