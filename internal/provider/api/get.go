package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/outbound"
	"github.com/pginbox/pginbox/internal/redact"
)

// maxPageBody is the largest list or detail response read, in bytes.
const maxPageBody = 16 << 20

// GetJSON makes one GET to an API on its guarded client and returns the 200
// body. Anything else is an error: a *RefusedError for a redirect (never
// followed) or a refused dial, an *APIError for another status or a
// transport failure, a *MalformedError for a body over maxPageBody. what
// names the request in errors.
func GetJSON(ctx context.Context, client *http.Client, provider, what, url string, header http.Header) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s API: %s: %w", provider, what, redact.URLError(err))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		err = redact.URLError(err)
		if DialRefused(err) {
			return nil, nil, &RefusedError{Provider: provider, ExternalID: what, Reason: RefusedDial, Detail: err.Error()}
		}
		var ne net.Error
		timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		return nil, nil, &APIError{Provider: provider, ExternalID: what, Timeout: timeout, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBody+1))
	if err != nil {
		return nil, nil, &APIError{Provider: provider, ExternalID: what, Err: err}
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if len(body) > maxPageBody {
			return nil, nil, &MalformedError{Provider: provider, ExternalID: what, Reason: "response over 16 MiB"}
		}
		return body, resp.Header, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, nil, &RefusedError{Provider: provider, ExternalID: what, Reason: RefusedRedirect,
			Detail: fmt.Sprintf("HTTP %d to %q not followed", resp.StatusCode, redact.URL(resp.Header.Get("Location")))}
	default:
		return nil, nil, &APIError{Provider: provider, ExternalID: what, StatusCode: resp.StatusCode,
			RetryAfter: outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
}

// ValidText reports whether s can be an idempotency key or event type:
// non-blank valid UTF-8 of at most 255 bytes without control characters.
func ValidText(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	blank := true
	for _, r := range s {
		if r == 0xFFFD || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
		if r != ' ' && r != '\t' {
			blank = false
		}
	}
	return !blank
}
