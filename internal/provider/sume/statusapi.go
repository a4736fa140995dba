package sume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/outbound"
	"github.com/pginbox/pginbox/internal/provider/api"
	"github.com/pginbox/pginbox/internal/provider/sig"
	"github.com/pginbox/pginbox/internal/redact"
)

// StatusAPI looks gaps up in Sume's job status API:
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
// on another origin is refused without a request (*api.RefusedError), since
// whoever wrote the expectation must be able neither to collect the key nor
// to answer in Sume's name. Redirects are not followed (a 3xx is refused
// too), and the client dials only the addresses BaseURL's host resolves to.
type StatusAPI struct {
	provider string
	base     string
	origin   api.Origin
	key      string
	client   *http.Client
}

var _ api.StatusAPI = (*StatusAPI)(nil)

// maxStatusBody is the largest status response read, in bytes.
const maxStatusBody = 1 << 20

// NewStatusAPI returns a Sume status API client for provider. baseURL must be
// an absolute http(s) URL; key may be empty (no Authorization header).
func NewStatusAPI(provider, baseURL, key string) (*StatusAPI, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := api.ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	return &StatusAPI{provider: provider, base: baseURL, origin: o, key: key, client: api.NewClient(o)}, nil
}

// Config returns the provider's name, the base URL (without a trailing
// slash) and the API key the client was built with.
func (s *StatusAPI) Config() (provider, baseURL, key string) { return s.provider, s.base, s.key }

// Origin returns the only origin the API contacts.
func (s *StatusAPI) Origin() api.Origin { return s.origin }

// Vet returns the *api.RefusedError a lookup of gap would return without
// contacting anyone, or nil when the gap would be asked about.
func (s *StatusAPI) Vet(gap api.Gap) error {
	_, err := s.endpoint(gap)
	return err
}

// Lookup asks Sume about the job gap.ExternalID.
func (s *StatusAPI) Lookup(ctx context.Context, gap api.Gap) (api.Lookup, error) {
	endpoint, err := s.endpoint(gap)
	if err != nil {
		return api.Lookup{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return api.Lookup{}, fmt.Errorf("%s API: %s: %w", s.provider, gap.ExternalID, redact.URLError(err))
	}
	req.Header.Set("Accept", "application/json")
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return api.Lookup{}, s.transportError(gap, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody+1))
	if err != nil {
		return api.Lookup{}, s.transportError(gap, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if len(body) > maxStatusBody {
			return api.Lookup{}, s.malformed(gap, "response over 1 MiB")
		}
		return s.parse(gap, body)
	case resp.StatusCode == http.StatusNotFound:
		return api.Lookup{State: api.LookupUnknown}, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return api.Lookup{}, &api.RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: api.RefusedRedirect,
			Detail: fmt.Sprintf("HTTP %d to %q not followed", resp.StatusCode, redact.URL(resp.Header.Get("Location")))}
	default:
		return api.Lookup{}, &api.APIError{
			Provider:   s.provider,
			ExternalID: gap.ExternalID,
			StatusCode: resp.StatusCode,
			RetryAfter: outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	}
}

// endpoint returns the URL to ask: the status_url when it is on the API's
// origin, else BaseURL's status path; a status_url elsewhere is refused.
func (s *StatusAPI) endpoint(gap api.Gap) (string, error) {
	if gap.StatusURL == "" {
		return s.base + "/v1/jobs/" + url.PathEscape(gap.ExternalID) + "/status", nil
	}
	u, err := url.Parse(gap.StatusURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &api.RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: api.RefusedBadStatusURL,
			Detail: "status_url is not an absolute http(s) URL"}
	}
	if !s.origin.Contains(u) {
		return "", &api.RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: api.RefusedForeignOrigin,
			Detail: fmt.Sprintf("status_url on %s, not the API's origin %s", api.OriginOf(u), s.origin)}
	}
	return u.String(), nil
}

// parse maps a 200 response to a Lookup.
func (s *StatusAPI) parse(gap api.Gap, body []byte) (api.Lookup, error) {
	env, err := sig.ReadEnvelope(body)
	if err != nil {
		return api.Lookup{}, s.malformed(gap, "not a JSON object")
	}
	status, ok := env.Str("status")
	if !ok {
		return api.Lookup{}, s.malformed(gap, "no status string")
	}
	if env.Has("job_id") {
		id, err := env.Key("job_id")
		if err != nil || id != gap.ExternalID {
			return api.Lookup{}, s.malformed(gap, "job_id is not the id asked about")
		}
	}
	var code string // error.code, "" when absent
	if raw := env["error"]; len(raw) > 0 && raw[0] == '{' {
		var e struct {
			Code any `json:"code"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return api.Lookup{}, s.malformed(gap, "error is not an object")
		}
		code, _ = e.Code.(string)
	}
	l := api.Lookup{Status: status, Payload: json.RawMessage(body)}
	switch status {
	case "COMPLETED":
		l.State, l.EventType = api.LookupTerminal, "job.completed"
	case "CANCELED":
		l.State, l.EventType = api.LookupTerminal, "job.canceled"
	case "ERROR":
		l.State, l.EventType = api.LookupTerminal, "job.failed"
		if code == "canceled" {
			l.EventType = "job.canceled"
		}
	default:
		l.State, l.Payload = api.LookupPending, nil
	}
	return l, nil
}

func (s *StatusAPI) malformed(gap api.Gap, reason string) error {
	return &api.MalformedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: reason}
}

func (s *StatusAPI) transportError(gap api.Gap, err error) error {
	err = redact.URLError(err) // a presigned status_url carries its token in the query
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	if api.DialRefused(err) {
		return &api.RefusedError{Provider: s.provider, ExternalID: gap.ExternalID, Reason: api.RefusedDial, Detail: err.Error()}
	}
	return &api.APIError{Provider: s.provider, ExternalID: gap.ExternalID, Timeout: timeout, Err: err}
}
