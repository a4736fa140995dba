package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// recorder is an HTTP server that is not the configured origin: it records
// every request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	a := &recorder{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.URL.Path)
		a.mu.Unlock()
		w.Write([]byte("{}"))
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *recorder) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// TestGuardedDialer: the client of one API dials only its origin's host and
// port, and never a link-local or metadata address unless the origin names
// it literally.
func TestGuardedDialer(t *testing.T) {
	t.Parallel()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }))
	defer ok.Close()
	other := newRecorder(t)
	o, err := ParseOrigin(ok.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(o)
	if resp, err := c.Get(ok.URL + "/x"); err != nil {
		t.Fatalf("the configured origin: %v", err)
	} else {
		resp.Body.Close()
	}
	port := ok.URL[strings.LastIndex(ok.URL, ":")+1:]
	for _, u := range []string{other.URL + "/x", "http://localhost:" + port + "/x", "http://169.254.169.254:" + port + "/latest/meta-data"} {
		_, err := c.Get(u)
		var refused *DialRefusedError
		if !errors.As(err, &refused) {
			t.Errorf("GET %s: %v, want a refused dial", u, err)
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("another port got %d requests", n)
	}
	// A host name is dialed at the addresses it resolves to.
	lo, _ := ParseOrigin("http://localhost:" + port)
	if resp, err := NewClient(lo).Get("http://localhost:" + port + "/x"); err != nil {
		t.Errorf("localhost origin: %v", err)
	} else {
		resp.Body.Close()
	}

	for ip, want := range map[string]bool{
		"169.254.169.254": true, "169.254.0.1": true, "fe80::1": true, "::ffff:169.254.169.254": true,
		"100.100.100.200": true, "fd00:ec2::254": true, "0.0.0.0": true, "::": true, "224.0.0.1": true,
		"127.0.0.1": false, "10.0.0.1": false, "::1": false, "203.0.113.9": false,
	} {
		if got := forbiddenIP(netip.MustParseAddr(ip)) != ""; got != want {
			t.Errorf("forbiddenIP(%s) = %v, want %v", ip, got, want)
		}
	}
}
