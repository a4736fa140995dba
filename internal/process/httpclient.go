package process

import (
	"errors"
	"net/http"
	"net/url"
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

// redactURLError returns err with the URL of a *url.Error stripped of its
// userinfo, query string and fragment: the error reaches last_error and
// webhooks.event_errors, which reader roles and the console read, and a
// URL's ?token=… or user:password@ must not.
func redactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}

// redactURL returns raw without userinfo, query string or fragment; a URL
// that does not parse is replaced whole.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the handler's URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
