package apiclient

import (
	"errors"
	"net/url"
)

// RedactURL returns raw without what may be a credential: its userinfo,
// query string and fragment (a presigned status_url carries its token
// there). A URL that does not parse is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// RedactURLError returns err with the URL of a *url.Error in it redacted
// ([RedactURL]): transport errors name the request's URL, and backfill logs
// them. Errors.Is and errors.As still reach the cause.
func RedactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: RedactURL(ue.URL), Err: ue.Err}
}
