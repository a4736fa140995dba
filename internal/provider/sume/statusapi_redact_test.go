package sume

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/api"
)

// TestSumeLookupErrorsDropPresignedTokens: a status_url may be presigned
// (its token in the query). When the lookup times out, the connection
// drops or the API redirects, the error backfill logs names the URL
// without its query string, and the redirect's Location without its own.
func TestSumeLookupErrorsDropPresignedTokens(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			<-r.Context().Done()
		case "/drop":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case "/moved":
			http.Redirect(w, r, "https://elsewhere.test/x?X-Amz-Signature=SENTINELloc", http.StatusFound)
		}
	}))
	defer srv.Close()
	client := mustSume(t, "sume", srv.URL, "")
	for _, path := range []string{"/slow", "/drop", "/moved"} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := client.Lookup(ctx, api.Gap{Provider: "sume", ExternalID: "j",
			StatusURL: srv.URL + path + "?X-Amz-Signature=SENTINELsig&X-Amz-Credential=x"})
		cancel()
		var apiErr *api.APIError
		var refused *api.RefusedError
		if err == nil || !(errors.As(err, &apiErr) || errors.As(err, &refused)) {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.Contains(err.Error(), "SENTINEL") {
			t.Errorf("%s: the error carries the presigned token: %v", path, err)
		}
		if path == "/slow" && (apiErr == nil || !apiErr.Timeout) {
			t.Errorf("%s: %v is no longer a timeout", path, err)
		}
	}
}
