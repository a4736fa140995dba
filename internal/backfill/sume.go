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
// Only BaseURL's origin (scheme, host, port) is ever contacted: a status_url
// on another origin is refused without a request (*RefusedError), since
// whoever wrote the expectation must be able neither to collect the key nor
// to answer in Sume's name. Redirects are not followed (a 3xx is refused
// too), and the client dials only the addresses BaseURL's host resolves to.
type SumeAPI struct {
	provider string
	base     string
	origin   Origin
	key      string
	client   *http.Client
}

var _ StatusAPI = (*SumeAPI)(nil)

// maxStatusBody is the largest status response read, in bytes.
const maxStatusBody = 1 << 20

// NewSumeAPI returns a Sume status API client for provider. baseURL must be
// an absolute http(s) URL; key may be empty (no Authorization header).
func NewSumeAPI(provider, baseURL, key string) (*SumeAPI, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	return &SumeAPI{provider: provider, base: baseURL, origin: o, key: key, client: newClient(o)}, nil
}

// Origin returns the only origin the API contacts.
func (s *SumeAPI) Origin() Origin { return s.origin }

// Vet returns the *RefusedError a lookup of gap would return without
// contacting anyone, or nil when the gap would be asked about.
func (s *SumeAPI) Vet(gap Gap) error {
	_, err := s.endpoint(gap)
	return err
}

// Lookup asks Sume about the job gap.ExternalID.
func (s *SumeAPI) Lookup(ctx context.Context, gap Gap) (Lookup, error) {
	endpoint, err := s.endpoint(gap)
	if err != nil {
		return Lookup{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return Lookup{}, fmt.Errorf("%s API: %s: %w", s.provider, gap.ExternalID, err)
	}
	req.Header.Set("Accept", "application/json")
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return Lookup{}, s.transportError(gap, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody+1))
	if err != nil {
		return Lookup{}, s.transportError(gap, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if len(body) > maxStatusBody {
			return Lookup{}, s.malformed(gap, "response over 1 MiB")
		}
		return s.parse(gap, body)
	case resp.StatusCode == http.StatusNotFound:
		return Lookup{State: LookupUnknown}, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Lookup{}, &RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: RefusedRedirect,
			Detail: fmt.Sprintf("HTTP %d to %q not followed", resp.StatusCode, resp.Header.Get("Location"))}
	default:
		return Lookup{}, &APIError{
			Provider:   s.provider,
			ExternalID: gap.ExternalID,
			StatusCode: resp.StatusCode,
			RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	}
}

// endpoint returns the URL to ask: the status_url when it is on the API's
// origin, else BaseURL's status path; a status_url elsewhere is refused.
func (s *SumeAPI) endpoint(gap Gap) (string, error) {
	if gap.StatusURL == "" {
		return s.base + "/v1/jobs/" + url.PathEscape(gap.ExternalID) + "/status", nil
	}
	u, err := url.Parse(gap.StatusURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: RefusedBadStatusURL,
			Detail: "status_url is not an absolute http(s) URL"}
	}
	if !s.origin.Contains(u) {
		return "", &RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: RefusedForeignOrigin,
			Detail: fmt.Sprintf("status_url on %s, not the API's origin %s", originOf(u), s.origin)}
	}
	return u.String(), nil
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

func (s *SumeAPI) malformed(gap Gap, reason string) error {
	return &MalformedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: reason}
}

func (s *SumeAPI) transportError(gap Gap, err error) error {
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	if errDialRefused(err) {
		return &RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: RefusedDial, Detail: err.Error()}
	}
	return &APIError{Provider: s.provider, ExternalID: gap.ExternalID, Timeout: timeout, Err: err}
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
