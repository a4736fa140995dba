// Package redact strips what may be a credential from URLs before they
// reach an error, a log line or last_error: userinfo, query string and
// fragment (a presigned URL or a ?token=… carries its secret there).
// Standard library only.
package redact

import (
	"errors"
	"net/url"
)

// URL returns raw without its userinfo, query string and fragment. A URL
// that does not parse is replaced whole.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// URLError returns err with the URL of a *url.Error in it redacted ([URL]):
// transport errors name the request's URL. errors.Is and errors.As still
// reach the cause.
func URLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: URL(ue.URL), Err: ue.Err}
}
