package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
)

// TestPaddleRedeliveriesAndLogAsDocumented runs `pginbox serve` as
// docs/providers/paddle.md configures it (PGINBOX_HANDLER=none, the
// default) and checks what the page says: the same body again (a retry of
// one notification) is `duplicate`; the same event_id with a new
// notification_id (a replay from Paddle's dashboard is a new notification)
// replaces the payload and is `updated`, revision 2 then 3, while the event
// is pending, and `duplicate` once it is processed; a refused delivery's log
// line is JSON, with the fields the page's grep and jq look for.
func TestPaddleRedeliveriesAndLogAsDocumented(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const secret = "pdl_ntfset_01docs_secret_0123"
	p := startRunner(t, map[string]string{
		"DATABASE_URL": conf.URL(), "PGINBOX_PROVIDERS": "billing=paddle", "PGINBOX_SECRET_BILLING": secret,
	})
	client := &http.Client{Timeout: 10 * time.Second}
	body := func(notification string) string {
		return fmt.Sprintf(`{"event_id": "evt_01docs", "event_type": "transaction.completed", "occurred_at": "2026-12-02T01:00:00.000000Z",
			"notification_id": %q, "data": {"id": "txn_1", "customer_id": "ctm_1"}}`, notification)
	}
	send := func(b string) (int, map[string]any) {
		return post(t, client, p.Base+"/webhooks/billing", testsign.Paddle(secret, b, time.Now()), []byte(b))
	}
	revision := func() int64 {
		return queryInt(t, pool, `SELECT revision FROM webhooks.events WHERE provider = 'billing' AND external_id = 'evt_01docs'`)
	}
	for _, step := range []struct {
		name, body, outcome string
		revision            int64
	}{
		{"first delivery", body("ntf_01"), "created", 1},
		{"a retry of that notification", body("ntf_01"), "duplicate", 1},
		{"a replay: a new notification of the event", body("ntf_02"), "updated", 2},
		{"another replay", body("ntf_03"), "updated", 3},
	} {
		if status, out := send(step.body); status != 200 || out["outcome"] != step.outcome || revision() != step.revision {
			t.Fatalf("%s: %d %v, revision %d; want %s, revision %d", step.name, status, out, revision(), step.outcome, step.revision)
		}
	}
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now() WHERE external_id = 'evt_01docs'`)
	if status, out := send(body("ntf_04")); status != 200 || out["outcome"] != "duplicate" || revision() != 3 {
		t.Fatalf("a replay once processed: %d %v, revision %d; want duplicate, revision 3", status, out, revision())
	}

	forged := body("ntf_05")
	if status, _ := post(t, client, p.Base+"/webhooks/billing", testsign.Paddle("pdl_ntfset_01guessed_secret", forged, time.Now()), []byte(forged)); status != 401 {
		t.Fatalf("forged: %d, want 401", status)
	}
	// The page's grep: '"msg":"delivery rejected"'; its jq reads these fields.
	var found bool
	waitFor(t, 10*time.Second, "the rejected delivery's log line", func() bool {
		for _, line := range strings.Split(p.Logs(), "\n") {
			if !strings.Contains(line, `"msg":"delivery rejected"`) {
				continue
			}
			var l struct {
				Provider string `json:"provider"`
				Status   int    `json:"status"`
				Reason   string `json:"reason"`
			}
			if err := json.Unmarshal([]byte(line), &l); err == nil && l.Provider == "billing" && l.Status == 401 && l.Reason == "signature mismatch" {
				found = true
				t.Logf("the log line: %s", line)
			}
		}
		return found
	})
}
