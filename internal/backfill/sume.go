package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/runner/verify"
)

// SumeAPI looks gaps up in Sume's job status API:
//
//	GET <BaseURL>/v1/jobs/{id}/status   (or the expectation's status_url)
//	Authorization: Bearer <Key>
//	→ {"job_id": "...", "status": "...", "error": {...}}
//
// mapped as follows: COMPLETED → job.completed; CANCELED →
// job.canceled; ERROR → job.canceled when error.code is "canceled", else
// job.failed; any other status is not terminal yet; 404 means Sume does not
// know the id. Status words are compared exactly (upper case), never guessed.
//
// The key is sent to a status_url only when BaseURL is empty or the
// status_url has the same scheme and host as BaseURL: whoever wrote the
// expectation must not be able to collect the key with a URL of their own.
type SumeAPI struct {
	// Provider names the provider in errors.
	Provider string
	// BaseURL is the API root, e.g. https://api.sume.example. Empty means
	// only expectations with a status_url can be looked up.
	BaseURL string
	// Key is the bearer token. Empty sends no Authorization header.
	Key string
	// Client makes the requests; nil means a client without a timeout of its
	// own (Run bounds each request through its context).
	Client *http.Client
}

var _ StatusAPI = (*SumeAPI)(nil)

// maxStatusBody is the largest status response read, in bytes.
const maxStatusBody = 1 << 20

// NewSumeAPI returns a Sume status API client for provider. baseURL may be
// empty (status_url only); otherwise it must be an absolute http(s) URL.
func NewSumeAPI(provider, baseURL, key string, client *http.Client) (*SumeAPI, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("provider %s: API URL %q is not an absolute http(s) URL", provider, baseURL)
		}
	}
	return &SumeAPI{Provider: provider, BaseURL: baseURL, Key: key, Client: client}, nil
}

// Lookup asks Sume about the job gap.ExternalID.
func (s *SumeAPI) Lookup(ctx context.Context, gap Gap) (Lookup, error) {
	endpoint, sendKey, err := s.endpoint(gap)
	if err != nil {
		return Lookup{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return Lookup{}, fmt.Errorf("%s API: %s: %w", s.name(gap), gap.ExternalID, err)
	}
	req.Header.Set("Accept", "application/json")
	if sendKey && s.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.Key)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Lookup{}, s.transportError(gap, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody+1))
	if err != nil {
		return Lookup{}, s.transportError(gap, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if len(body) > maxStatusBody {
			return Lookup{}, s.malformed(gap, "response over 1 MiB")
		}
		return s.parse(gap, body)
	case http.StatusNotFound:
		return Lookup{State: LookupUnknown}, nil
	default:
		return Lookup{}, &APIError{
			Provider:   s.name(gap),
			ExternalID: gap.ExternalID,
			StatusCode: resp.StatusCode,
			RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	}
}

// endpoint returns the URL to ask and whether the key may go there.
func (s *SumeAPI) endpoint(gap Gap) (string, bool, error) {
	if gap.StatusURL != "" {
		u, err := url.Parse(gap.StatusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", false, fmt.Errorf("%s API: %s: status_url %q is not an absolute http(s) URL",
				s.name(gap), gap.ExternalID, gap.StatusURL)
		}
		if s.BaseURL == "" {
			return u.String(), true, nil
		}
		base, _ := url.Parse(s.BaseURL)
		same := strings.EqualFold(base.Scheme, u.Scheme) && strings.EqualFold(base.Host, u.Host)
		return u.String(), same, nil
	}
	if s.BaseURL == "" {
		return "", false, ErrNoEndpoint
	}
	return s.BaseURL + "/v1/jobs/" + url.PathEscape(gap.ExternalID) + "/status", true, nil
}

// parse maps a 200 response to a Lookup.
func (s *SumeAPI) parse(gap Gap, body []byte) (Lookup, error) {
	env, err := verify.ReadEnvelope(body)
	if err != nil {
		return Lookup{}, s.malformed(gap, "not a JSON object")
	}
	status, ok := env.Str("status")
	if !ok {
		return Lookup{}, s.malformed(gap, "no status string")
	}
	if env.Has("job_id") {
		id, err := env.Key("job_id")
		if err != nil || id != gap.ExternalID {
			return Lookup{}, s.malformed(gap, "job_id is not the id asked about")
		}
	}
	var code string // error.code, "" when absent
	if raw := env["error"]; len(raw) > 0 && raw[0] == '{' {
		var e struct {
			Code any `json:"code"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return Lookup{}, s.malformed(gap, "error is not an object")
		}
		code, _ = e.Code.(string)
	}
	l := Lookup{Status: status, Payload: json.RawMessage(body)}
	switch status {
	case "COMPLETED":
		l.State, l.EventType = LookupTerminal, "job.completed"
	case "CANCELED":
		l.State, l.EventType = LookupTerminal, "job.canceled"
	case "ERROR":
		l.State, l.EventType = LookupTerminal, "job.failed"
		if code == "canceled" {
			l.EventType = "job.canceled"
		}
	default:
		l.State, l.Payload = LookupPending, nil
	}
	return l, nil
}

func (s *SumeAPI) name(gap Gap) string {
	if s.Provider != "" {
		return s.Provider
	}
	return gap.Provider
}

func (s *SumeAPI) malformed(gap Gap, reason string) error {
	return &MalformedError{Provider: s.name(gap), ExternalID: gap.ExternalID, Reason: reason}
}

func (s *SumeAPI) transportError(gap Gap, err error) error {
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	return &APIError{Provider: s.name(gap), ExternalID: gap.ExternalID, Timeout: timeout, Err: err}
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
// Anything else, or a time in the past, is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
