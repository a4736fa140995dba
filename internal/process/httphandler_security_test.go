package process

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/pginboxtype"
)

// postEvent runs the http: handler built from spec on one event.
func postEvent(t *testing.T, spec string) error {
	t.Helper()
	h, err := ParseHandler(spec, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return h.Handle(context.Background(), nil, &pginboxtype.Event{ID: 7, Provider: "sume", EventType: "job.completed"})
}

// TestHTTPHandlerErrorHasNoCredentials: when the POST fails, the error that
// becomes last_error (read by reader roles and the console) names the URL
// without its userinfo or query string.
func TestHTTPHandlerErrorHasNoCredentials(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the POST fails with a *url.Error
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Second)
	}))
	defer slow.Close()
	for name, u := range map[string]string{
		"refused":   "http://hookuser:SENTINELpass@" + addr + "/hook?token=SENTINELtok&x=1#SENTINELfrag",
		"timed out": strings.Replace(slow.URL, "://", "://u:SENTINELpass@", 1) + "/hook?token=SENTINELtok",
	} {
		spec := "http:" + u
		h, err := ParseHandler(spec, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		herr := h.Handle(context.Background(), nil, &pginboxtype.Event{ID: 7})
		if herr == nil {
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(herr.Error(), "SENTINEL") || strings.Contains(herr.Error(), "hookuser") {
			t.Errorf("%s: last_error would hold a credential: %s", name, herr)
		}
		if !strings.Contains(herr.Error(), "/hook") {
			t.Errorf("%s: the error no longer names the URL: %s", name, herr)
		}
	}
}

// TestHTTPHandlerFollowsNoRedirect: a redirect, to another origin or to the
// same one, is not followed: the event body never reaches the other origin,
// a 303 never turns the POST into a GET that "succeeds", and the attempt
// fails with the 3xx.
func TestHTTPHandlerFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cross":
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		case "/see-other":
			http.Redirect(w, r, "/ok", http.StatusSeeOther)
		case "/ok":
			gets.Add(1)
		}
	}))
	defer srv.Close()
	for _, path := range []string{"/cross", "/see-other"} {
		err := postEvent(t, "http:"+srv.URL+path)
		if err == nil || !strings.Contains(err.Error(), "http handler: 30") {
			t.Errorf("%s: %v, want the 3xx as the failure", path, err)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the event was sent %d times to the origin a redirect named", n)
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("a 303 was followed with a GET %d times", n)
	}
}

// TestHTTPHandlerIgnoresProxyVariables: the handler's client has no proxy,
// whatever HTTP_PROXY / HTTPS_PROXY say (the stock transport reads them; a
// loopback target is never proxied, so this is checked on the transport).
func TestHTTPHandlerIgnoresProxyVariables(t *testing.T) {
	t.Parallel()
	h, err := ParseHandler("http:https://hooks.example.test/in", 0)
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := h.(*httpHandler).Client.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatalf("transport %T with a proxy function: HTTP(S)_PROXY would receive every event", h.(*httpHandler).Client.Transport)
	}
}

// TestParseHandlerErrorsDoNotRepeatTheURL: a PGINBOX_HANDLER that is not
// valid is refused without printing it (it may carry a token).
func TestParseHandlerErrorsDoNotRepeatTheURL(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"http:ftp://u:SENTINEL@h/x", "https://u:SENTINEL@hooks.test/x?token=SENTINEL", "http:https://:SENTINEL@/"} {
		_, err := ParseHandler(spec, 0)
		if err == nil || strings.Contains(err.Error(), "SENTINEL") {
			t.Errorf("%q: %v", spec, err)
		}
	}
}
