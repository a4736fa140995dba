package alert

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/outbound"
)

// outcome is what became of one POST.
type outcome int

const (
	// retry: no answer, a 5xx, 408 or 429: tried again later.
	retry outcome = iota
	// delivered: a 2xx.
	delivered
	// rejected: another status (a 4xx such as 400, 401, 404, or a 3xx):
	// sending the same request again cannot succeed, so it is given up and
	// logged at error level; later alerts are still sent.
	rejected
)

// String returns the label of the outcome in pginbox_alert_posts_total.
func (o outcome) String() string {
	switch o {
	case delivered:
		return "delivered"
	case rejected:
		return "rejected"
	}
	return "retry"
}

// result is an outcome with its error and the receiver's Retry-After.
type result struct {
	outcome    outcome
	err        error
	retryAfter time.Duration
}

// Origin returns the scheme and host of raw, all an error or a log line
// shows of PGINBOX_ALERT_URL: a Slack or Alertmanager relay URL may carry
// its secret in the path, not only in userinfo or the query.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(the alert URL)"
	}
	return u.Scheme + "://" + u.Host
}

// errorText returns err with the request's URL cut to its origin
// ([Origin]): transport errors name the URL. errors.Is and errors.As still
// reach the cause.
func (s *Sender) errorText(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: Origin(ue.URL), Err: ue.Err}
}

// CheckURL reports whether raw can receive alerts: an absolute http or
// https URL with a host. The error names PGINBOX_ALERT_URL and not the
// value (a webhook URL may carry a secret in its path).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("PGINBOX_ALERT_URL: is not an absolute http or https URL")
	}
	return nil
}

// DecodeSecret decodes a Standard Webhooks secret: "whsec_" then the
// base64 of at least 16 bytes. Its errors never contain the secret.
func DecodeSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`does not start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil {
		return nil, errors.New(`is not base64 after "whsec_"`)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("decodes to %d bytes, fewer than 16", len(key))
	}
	return key, nil
}

// Sign returns the webhook-signature header of Standard Webhooks for a
// message: "v1," and the base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>").
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// post sends a once and classifies the answer.
func (s *Sender) post(ctx context.Context, a Alert) result {
	body, err := formats[s.cfg.Format](a, s.cfg)
	if err != nil {
		return result{outcome: rejected, err: fmt.Errorf("encode: %w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return result{outcome: rejected, err: s.errorText(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pginbox-alert")
	if s.key != nil {
		id, now := "pginbox-alert-"+strconv.FormatInt(a.ID, 10), s.now()
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", Sign(s.key, id, now, body))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return result{outcome: retry, err: s.errorText(err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return result{outcome: delivered}
	case code >= 500, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return result{outcome: retry, err: fmt.Errorf("POST %s: %s", Origin(s.cfg.URL), resp.Status),
			retryAfter: outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	default:
		return result{outcome: rejected, err: fmt.Errorf("POST %s: %s", Origin(s.cfg.URL), resp.Status)}
	}
}
