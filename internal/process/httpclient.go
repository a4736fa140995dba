package process

import (
	"net/http"
	"time"
)

// newHTTPClient returns the http: handler's client: each POST bounded by
// timeout, no proxy whatever HTTP_PROXY / HTTPS_PROXY say (a proxy would
// receive every event), and no redirect followed (a 3xx is the answer: a
// redirect to another origin would carry the event there, and a 303 would
// turn the POST into a GET that "succeeds" without delivering it).
func newHTTPClient(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{
		Timeout:       timeout,
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
