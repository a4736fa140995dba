package sume

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/api"
)

// TestSumeLookupMapping: the mapping of Sume statuses, exactly:
// nothing is guessed from a status word it does not name.
func TestSumeLookupMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		state      api.LookupState
		eventType  string
		malformed  bool
	}{
		{"COMPLETED", `{"job_id": "j", "status": "COMPLETED"}`, api.LookupTerminal, "job.completed", false},
		{"CANCELED", `{"job_id": "j", "status": "CANCELED"}`, api.LookupTerminal, "job.canceled", false},
		{"ERROR canceled", `{"job_id": "j", "status": "ERROR", "error": {"code": "canceled"}}`, api.LookupTerminal, "job.canceled", false},
		{"ERROR other code", `{"job_id": "j", "status": "ERROR", "error": {"code": "timeout"}}`, api.LookupTerminal, "job.failed", false},
		{"ERROR numeric code", `{"job_id": "j", "status": "ERROR", "error": {"code": 7}}`, api.LookupTerminal, "job.failed", false},
		{"ERROR no error object", `{"job_id": "j", "status": "ERROR"}`, api.LookupTerminal, "job.failed", false},
		{"ERROR error is a string", `{"job_id": "j", "status": "ERROR", "error": "canceled"}`, api.LookupTerminal, "job.failed", false},
		{"nested code is not error.code", `{"job_id": "j", "status": "ERROR", "detail": {"error": {"code": "canceled"}}}`, api.LookupTerminal, "job.failed", false},
		{"IN_QUEUE", `{"job_id": "j", "status": "IN_QUEUE"}`, api.LookupPending, "", false},
		{"IN_PROGRESS", `{"job_id": "j", "status": "IN_PROGRESS"}`, api.LookupPending, "", false},
		{"lower-case completed is not COMPLETED", `{"job_id": "j", "status": "completed"}`, api.LookupPending, "", false},
		{"CANCELLED is not CANCELED", `{"job_id": "j", "status": "CANCELLED"}`, api.LookupPending, "", false},
		{"no job_id is fine", `{"status": "COMPLETED"}`, api.LookupTerminal, "job.completed", false},
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
			client := mustSume(t, "sume", srv.URL, "")
			got, err := client.Lookup(context.Background(), api.Gap{Provider: "sume", ExternalID: "j"})
			var malformed *api.MalformedError
			if tc.malformed {
				if !errors.As(err, &malformed) {
					t.Fatalf("Lookup = %+v, %v; want a *api.MalformedError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if got.State != tc.state || got.EventType != tc.eventType {
				t.Fatalf("Lookup = (%s, %q), want (%s, %q)", got.State, got.EventType, tc.state, tc.eventType)
			}
			if tc.state == api.LookupTerminal && string(got.Payload) != tc.body {
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
			client := mustSume(t, "sume", srv.URL, "")
			got, err := client.Lookup(context.Background(), api.Gap{Provider: "sume", ExternalID: "j"})
			if tc.unknown {
				if err != nil || got.State != api.LookupUnknown {
					t.Fatalf("Lookup = %+v, %v; want api.LookupUnknown", got, err)
				}
				return
			}
			var apiErr *api.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("Lookup error %v, want an *api.APIError with status %d", err, tc.status)
			}
			if apiErr.Retryable() != tc.retryable || errors.Is(err, api.ErrUnauthorized) != tc.unauthorized || apiErr.RetryAfter != tc.wait {
				t.Fatalf("%v: retryable %v, unauthorized %v, retry after %s", err, apiErr.Retryable(),
					errors.Is(err, api.ErrUnauthorized), apiErr.RetryAfter)
			}
		})
	}
}

// TestSumeLookupTimeoutIsRetryable: a request cut by its context deadline is
// a retryable *api.APIError marked Timeout.
func TestSumeLookupTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := (mustSume(t, "sume", srv.URL, "")).Lookup(ctx, api.Gap{Provider: "sume", ExternalID: "j"})
	var apiErr *api.APIError
	if !errors.As(err, &apiErr) || !apiErr.Timeout || !apiErr.Retryable() {
		t.Fatalf("Lookup error %#v, want a retryable timeout", err)
	}
}

// TestSumeEndpointAndKey: the key goes to the API's origin only; a
// status_url on another origin (another host, port or scheme) is refused
// without a request.
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
	port := home.URL[strings.LastIndex(home.URL, ":")+1:]
	tests := []struct {
		name, base, statusURL, id string
		want                      *seen  // nil: no request
		refused                   string // the api.RefusedError reason
	}{
		{"base URL", home.URL, "", "job 1/2", &seen{"/v1/jobs/job%201%2F2/status", "Bearer k"}, ""},
		{"base URL with a trailing slash", home.URL + "/", "", "j", &seen{"/v1/jobs/j/status", "Bearer k"}, ""},
		{"status_url on the same origin", home.URL, home.URL + "/custom/j", "j", &seen{"/custom/j", "Bearer k"}, ""},
		{"status_url on the same origin, scheme in capitals", home.URL, "HTTP://127.0.0.1:" + port + "/custom/j", "j", &seen{"/custom/j", "Bearer k"}, ""},
		{"status_url on another port", home.URL, elsewhere.URL + "/custom/j", "j", nil, api.RefusedForeignOrigin},
		{"status_url with another scheme", home.URL, "https://127.0.0.1:" + port + "/custom/j", "j", nil, api.RefusedForeignOrigin},
		{"status_url on another host name", home.URL, "http://localhost:" + port + "/custom/j", "j", nil, api.RefusedForeignOrigin},
		{"status_url with credentials", home.URL, "http://u:p@127.0.0.1:" + port + "/custom/j", "j", nil, api.RefusedForeignOrigin},
		{"status_url not a URL", home.URL, "ftp://x/j", "j", nil, api.RefusedBadStatusURL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			client := mustSume(t, "sume", tc.base, "k")
			_, err := client.Lookup(context.Background(), api.Gap{Provider: "sume", ExternalID: tc.id, StatusURL: tc.statusURL})
			var refused *api.RefusedError
			if tc.refused != "" {
				if !errors.As(err, &refused) || refused.Reason != tc.refused {
					t.Fatalf("Lookup: %v, want a refusal %q", err, tc.refused)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.want == nil && len(got) != 0 || tc.want != nil && (len(got) != 1 || got[0] != *tc.want) {
				t.Fatalf("requests %+v, want %v", got, tc.want)
			}
		})
	}
	if _, err := NewStatusAPI("sume", "", "k"); err == nil {
		t.Fatal("a Sume API without a base URL")
	}
}

// mustSume returns a StatusAPI for provider on base.
func mustSume(t *testing.T, provider, base, key string) *StatusAPI {
	t.Helper()
	client, err := NewStatusAPI(provider, base, key)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
