// Package outbound holds the rules every request pginbox sends to a URL an
// operator configured follows: the http: handler's POSTs and the alert
// POSTs use one client, and backfill and alerts read Retry-After alike.
package outbound

import (
	"net/http"
	"time"
)

// Client returns a client for POSTs to a configured URL: each request
// bounded by timeout, no proxy whatever HTTP_PROXY / HTTPS_PROXY say (a
// proxy would receive every event or alert), and no redirect followed (a
// 3xx is the answer: a redirect to another origin would carry the body and
// its signature there, and a 303 would turn the POST into a GET that
// "succeeds" without delivering it).
func Client(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{
		Timeout:       timeout,
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
