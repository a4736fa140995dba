package backfill

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/envconfig"
)

// TestSumeLookupMapping: the mapping of Sume statuses, exactly:
// nothing is guessed from a status word it does not name.
func TestSumeLookupMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		state      LookupState
		eventType  string
		malformed  bool
	}{
		{"COMPLETED", `{"job_id": "j", "status": "COMPLETED"}`, LookupTerminal, "job.completed", false},
		{"CANCELED", `{"job_id": "j", "status": "CANCELED"}`, LookupTerminal, "job.canceled", false},
		{"ERROR canceled", `{"job_id": "j", "status": "ERROR", "error": {"code": "canceled"}}`, LookupTerminal, "job.canceled", false},
		{"ERROR other code", `{"job_id": "j", "status": "ERROR", "error": {"code": "timeout"}}`, LookupTerminal, "job.failed", false},
		{"ERROR numeric code", `{"job_id": "j", "status": "ERROR", "error": {"code": 7}}`, LookupTerminal, "job.failed", false},
		{"ERROR no error object", `{"job_id": "j", "status": "ERROR"}`, LookupTerminal, "job.failed", false},
		{"ERROR error is a string", `{"job_id": "j", "status": "ERROR", "error": "canceled"}`, LookupTerminal, "job.failed", false},
		{"nested code is not error.code", `{"job_id": "j", "status": "ERROR", "detail": {"error": {"code": "canceled"}}}`, LookupTerminal, "job.failed", false},
		{"IN_QUEUE", `{"job_id": "j", "status": "IN_QUEUE"}`, LookupPending, "", false},
		{"IN_PROGRESS", `{"job_id": "j", "status": "IN_PROGRESS"}`, LookupPending, "", false},
		{"lower-case completed is not COMPLETED", `{"job_id": "j", "status": "completed"}`, LookupPending, "", false},
		{"CANCELLED is not CANCELED", `{"job_id": "j", "status": "CANCELLED"}`, LookupPending, "", false},
		{"no job_id is fine", `{"status": "COMPLETED"}`, LookupTerminal, "job.completed", false},
		{"a numeric job_id of another job", `{"job_id": 123, "status": "COMPLETED"}`, 0, "", true},
		{"another job_id", `{"job_id": "k", "status": "COMPLETED"}`, 0, "", true},
		{"no status", `{"job_id": "j"}`, 0, "", true},
		{"status not a string", `{"job_id": "j", "status": 3}`, 0, "", true},
		{"empty body", ``, 0, "", true},
		{"truncated", `{"job_id": "j", "status": "COMPL`, 0, "", true},
		{"an array", `[{"status": "COMPLETED"}]`, 0, "", true},
		{"trailing data", `{"status": "COMPLETED"} {}`, 0, "", true},
		{"a \\u0000 jsonb would refuse", `{"job_id": "j", "status": "COMPLETED", "x": "\u0000"}`, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			api := &SumeAPI{Provider: "sume", BaseURL: srv.URL, Client: srv.Client()}
			got, err := api.Lookup(context.Background(), Gap{Provider: "sume", ExternalID: "j"})
			var malformed *MalformedError
			if tc.malformed {
				if !errors.As(err, &malformed) {
					t.Fatalf("Lookup = %+v, %v; want a *MalformedError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if got.State != tc.state || got.EventType != tc.eventType {
				t.Fatalf("Lookup = (%s, %q), want (%s, %q)", got.State, got.EventType, tc.state, tc.eventType)
			}
			if tc.state == LookupTerminal && string(got.Payload) != tc.body {
				t.Fatalf("payload %s, want the response body %s", got.Payload, tc.body)
			}
		})
	}
}

// TestSumeLookupStatuses: HTTP statuses other than 200 map to the unknown
// state (404) or to typed errors that say whether a retry may help.
func TestSumeLookupStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status       int
		retryAfter   string
		unknown      bool
		retryable    bool
		unauthorized bool
		wait         time.Duration
	}{
		{status: 404, unknown: true},
		{status: 401, unauthorized: true},
		{status: 403, unauthorized: true},
		{status: 400},
		{status: 410},
		{status: 500, retryable: true},
		{status: 503, retryable: true, retryAfter: "7", wait: 7 * time.Second},
		{status: 429, retryable: true, retryAfter: "2", wait: 2 * time.Second},
		{status: 429, retryable: true, retryAfter: "soon"},
		{status: 408, retryable: true},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			api := &SumeAPI{BaseURL: srv.URL, Client: srv.Client()}
			got, err := api.Lookup(context.Background(), Gap{Provider: "sume", ExternalID: "j"})
			if tc.unknown {
				if err != nil || got.State != LookupUnknown {
					t.Fatalf("Lookup = %+v, %v; want LookupUnknown", got, err)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("Lookup error %v, want an *APIError with status %d", err, tc.status)
			}
			if apiErr.Retryable() != tc.retryable || errors.Is(err, ErrUnauthorized) != tc.unauthorized || apiErr.RetryAfter != tc.wait {
				t.Fatalf("%v: retryable %v, unauthorized %v, retry after %s", err, apiErr.Retryable(),
					errors.Is(err, ErrUnauthorized), apiErr.RetryAfter)
			}
		})
	}
}

// TestSumeLookupTimeoutIsRetryable: a request cut by its context deadline is
// a retryable *APIError marked Timeout.
func TestSumeLookupTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := (&SumeAPI{BaseURL: srv.URL, Client: srv.Client()}).Lookup(ctx, Gap{Provider: "sume", ExternalID: "j"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !apiErr.Timeout || !apiErr.Retryable() {
		t.Fatalf("Lookup error %#v, want a retryable timeout", err)
	}
}

// TestSumeEndpointAndKey: the URL asked, and where the key may go: the
// expectation's status_url wins over the base URL, and the key goes to a
// status_url only on the base URL's own origin (or when there is no base
// URL), so whoever writes expectations cannot collect it.
func TestSumeEndpointAndKey(t *testing.T) {
	t.Parallel()
	type seen struct{ path, auth string }
	var mu sync.Mutex
	var got []seen
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.URL.EscapedPath(), r.Header.Get("Authorization")})
		mu.Unlock()
		w.Write([]byte(`{"status": "IN_PROGRESS"}`))
	})
	home, elsewhere := httptest.NewServer(handler), httptest.NewServer(handler)
	defer home.Close()
	defer elsewhere.Close()
	tests := []struct {
		name, base, statusURL, id string
		want                      seen
	}{
		{"base URL", home.URL, "", "job 1/2", seen{"/v1/jobs/job%201%2F2/status", "Bearer k"}},
		{"base URL with a trailing slash", home.URL + "/", "", "j", seen{"/v1/jobs/j/status", "Bearer k"}},
		{"status_url on the same origin", home.URL, home.URL + "/custom/j", "j", seen{"/custom/j", "Bearer k"}},
		{"status_url elsewhere", home.URL, elsewhere.URL + "/custom/j", "j", seen{"/custom/j", ""}},
		{"status_url without a base URL", "", elsewhere.URL + "/poll/j", "j", seen{"/poll/j", "Bearer k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			api, err := NewSumeAPI("sume", tc.base, "k", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := api.Lookup(context.Background(), Gap{Provider: "sume", ExternalID: tc.id, StatusURL: tc.statusURL}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("requests %+v, want [%+v]", got, tc.want)
			}
		})
	}
	api, _ := NewSumeAPI("sume", "", "k", nil)
	if _, err := api.Lookup(context.Background(), Gap{Provider: "sume", ExternalID: "j"}); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("no base URL and no status_url: %v, want ErrNoEndpoint", err)
	}
}

// TestAPIs: which providers get which API from the
// environment, and which settings are refused.
func TestAPIs(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PGINBOX_API_URL_SUME_EU": "https://eu.sume.test/",
		"PGINBOX_API_KEY_SUME_EU": "eu-key",
		"PGINBOX_API_KEY_SUME":    "only-a-key",
		"PGINBOX_API_KEY_GH":      "ignored: github has no status API",
	}
	getenv := func(k string) string { return env[k] }
	apis, err := APIs(map[string]string{"sume-eu": "sume", "sume": "sume", "gh": "github"}, envconfig.Endpoints(getenv), nil)
	if err != nil {
		t.Fatal(err)
	}
	eu, ok := apis["sume-eu"].(*SumeAPI)
	if !ok || eu.BaseURL != "https://eu.sume.test" || eu.Key != "eu-key" || eu.Provider != "sume-eu" {
		t.Fatalf("sume-eu: %#v", apis["sume-eu"])
	}
	if s, ok := apis["sume"].(*SumeAPI); !ok || s.BaseURL != "" || s.Key != "only-a-key" {
		t.Fatalf("sume without a URL (status_url only): %#v", apis["sume"])
	}
	if api, ok := apis["gh"]; !ok || api != nil {
		t.Fatalf("gh: %#v, want an explicit nil (no API, no fallback)", api)
	}
	if apis[AnyProvider] == nil {
		t.Fatal("no AnyProvider fallback")
	}

	for name, tc := range map[string]struct {
		env   map[string]string
		kinds map[string]string
		want  string
	}{
		"URL for a kind without a status API": {map[string]string{"PGINBOX_API_URL_STRIPE_1": "https://api.stripe.test"},
			map[string]string{"stripe-1": "stripe"}, `PGINBOX_API_URL_STRIPE_1: provider "stripe-1" is of kind "stripe"`},
		"relative URL": {map[string]string{"PGINBOX_API_URL_SUME": "api.sume.test"},
			map[string]string{"sume": "sume"}, "PGINBOX_API_URL_SUME: provider sume: API URL \"api.sume.test\" is not an absolute http(s) URL"},
	} {
		_, err := APIs(tc.kinds, envconfig.Endpoints(func(k string) string { return tc.env[k] }), nil)
		var cfgErr *envconfig.Error
		if !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a *envconfig.Error containing %q", name, err, tc.want)
		}
	}

	// The fallback reads an unconfigured provider's settings when it meets it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer legacy-key" || r.URL.Path != "/v1/jobs/j/status" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"status": "COMPLETED"}`))
	}))
	defer srv.Close()
	env["PGINBOX_API_URL_LEGACY_SYS"] = srv.URL
	env["PGINBOX_API_KEY_LEGACY_SYS"] = "legacy-key"
	got, err := apis[AnyProvider].Lookup(context.Background(), Gap{Provider: "legacy-sys", ExternalID: "j"})
	if err != nil || got.EventType != "job.completed" {
		t.Fatalf("fallback lookup: %+v, %v", got, err)
	}
	env["PGINBOX_API_URL_BROKEN"] = "not a url"
	if _, err := apis[AnyProvider].Lookup(context.Background(), Gap{Provider: "broken", ExternalID: "j"}); err == nil {
		t.Fatal("fallback with a bad URL: no error")
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-3":                            0,
		"12":                            12 * time.Second,
		"999999":                        24 * time.Hour,
		"Fri, 02 Jan 2026 03:04:35 GMT": 30 * time.Second,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0, // in the past
		"tomorrow":                      0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}
