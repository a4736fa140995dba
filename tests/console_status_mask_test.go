package tests

import (
	"strings"
	"testing"

	"github.com/pginbox/pginbox/runner"
)

// TestStatusHidesStatusURL: an open gap whose status_url carries a
// presigned token is listed by /api/status and the page without that URL,
// as webhooks.find_gaps shows it to reader roles (status_url NULL).
func TestStatusHidesStatusURL(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `INSERT INTO webhooks.expectations (provider, external_id, deadline, status_url)
		VALUES ('sume', 'gap_masked', now() - interval '1 hour', 'https://user:pw@api.sume.dev/v1/jobs/gap_masked?token=presigned-s3cr3t')`)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	for _, path := range []string{"/api/status", "/"} {
		code, _, body := adminDo(t, nil, "GET", srv.Admin+path, testAdminToken, "", nil)
		if code != 200 || !strings.Contains(body, "gap_masked") {
			t.Fatalf("GET %s: %d, want the gap listed:\n%.500s", path, code, body)
		}
		for _, leak := range []string{"presigned-s3cr3t", "api.sume.dev", "status_url", "user:pw"} {
			if strings.Contains(body, leak) {
				t.Errorf("GET %s shows %q of the gap's status_url", path, leak)
			}
		}
	}
}
