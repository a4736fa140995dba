package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestOrderingCommand: `pginbox ordering` says when nothing is ordered,
// then shows an ordered provider's settings and counts and the blocked
// sequence with its head event, as a table and as JSON, and --provider
// narrows both.
func TestOrderingCommand(t *testing.T) {
	t.Parallel()
	env, pool := adminDB(t)
	ctx := context.Background()
	code, out, errOut := runCLI(t, env, "ordering")
	if code != 0 || !strings.Contains(out, "no provider is ordered") {
		t.Fatalf("nothing ordered: exit %d\n%s%s", code, out, errOut)
	}

	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.created')`)
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('gh', '$.repository.id', dead_blocks => false)`)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'evt_1', 'customer.created', '{"created": 1, "data": {"object": {"customer": "cus_9"}}}')`)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'evt_2', 'customer.updated', '{"created": 2, "data": {"object": {"customer": "cus_9"}}}')`)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('stripe', 'evt_3', 'customer.updated', '{"created": 3, "data": {"object": {"customer": "cus_9"}}}')`)
	var head int64
	if err := pool.QueryRow(ctx, `SELECT webhooks.fail(c.id, 'w', c.attempts, 'handler: no such plan') IS NOT NULL, c.id FROM webhooks.claim('w', 10) AS c`).Scan(new(bool), &head); err != nil {
		t.Fatalf("claim and fail the head: %v", err)
	}

	code, out, errOut = runCLI(t, env, "ordering")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"$.data.object.customer  $.created", "gh", "$.repository.id", "received_at",
		"1 blocked sequences", "cus_9", strconv.FormatInt(head, 10), "1/", "handler: no such plan", "pginbox replay <head event>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}

	code, out, errOut = runCLI(t, env, "ordering", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var st struct {
		Providers []struct {
			Provider   string  `json:"provider"`
			KeyPath    string  `json:"key_path"`
			OrderPath  *string `json:"order_path"`
			DeadBlocks bool    `json:"dead_blocks"`
			Blocked    int64   `json:"blocked_sequences"`
			Waiting    int64   `json:"waiting_events"`
		} `json:"providers"`
		Blocked []struct {
			Provider string `json:"provider"`
			Key      string `json:"sequence_key"`
			HeadID   int64  `json:"head_event_id"`
			Status   string `json:"head_status"`
			Waiting  int64  `json:"waiting_events"`
		} `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if len(st.Providers) != 2 || st.Providers[1].Provider != "stripe" || st.Providers[1].Blocked != 1 || st.Providers[1].Waiting != 2 ||
		st.Providers[1].OrderPath == nil || *st.Providers[1].OrderPath != "$.created" || !st.Providers[1].DeadBlocks ||
		st.Providers[0].Provider != "gh" || st.Providers[0].DeadBlocks || st.Providers[0].Blocked != 0 {
		t.Fatalf("providers %+v", st.Providers)
	}
	if len(st.Blocked) != 1 || st.Blocked[0].HeadID != head || st.Blocked[0].Key != "cus_9" || st.Blocked[0].Status != "pending" || st.Blocked[0].Waiting != 2 {
		t.Fatalf("blocked %+v, want cus_9 on head %d with 2 waiting", st.Blocked, head)
	}

	code, out, _ = runCLI(t, env, "ordering", "--provider", "gh")
	if code != 0 || strings.Contains(out, "stripe") || !strings.Contains(out, "no blocked sequence") {
		t.Fatalf("--provider gh: exit %d\n%s", code, out)
	}
}
