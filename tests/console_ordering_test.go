package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/runner"
)

// TestConsoleShowsBlockedSequences: with a provider ordered per customer
// and the head of one customer's sequence failing, /api/status and the
// overview show the provider's settings, one blocked sequence with the
// events waiting behind it, and its head event, one click from the
// overview; the head's page lists its error and a waiting event's page
// links to the head. A provider whose ordering allows dead events through
// shows no blocked sequence.
func TestConsoleShowsBlockedSequences(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.created')`)
	execSQL(t, pool, `SELECT webhooks.set_ordering('gh', '$.repository.id', dead_blocks => false)`)
	head, _ := ingest(t, pool, "stripe", "evt_a", "customer.subscription.created", `{"created": 10, "data": {"object": {"customer": "cus_7"}}}`)
	waiting, _ := ingest(t, pool, "stripe", "evt_b", "customer.subscription.updated", `{"created": 20, "data": {"object": {"customer": "cus_7"}}}`)
	ingest(t, pool, "stripe", "evt_c", "customer.subscription.updated", `{"created": 30, "data": {"object": {"customer": "cus_7"}}}`)
	c := claim(t, pool, "w", 10, "1 minute")
	if len(c) != 1 || c[0].ID != head {
		t.Fatalf("claimed %v, want the head %d alone", c, head)
	}
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', $2, 'handler: plan price_9 not found')`, c[0].ID, c[0].Attempts)
	// gh: a dead event does not hold its repository's later events.
	dead, _ := ingest(t, pool, "gh", "d1", "push", `{"repository": {"id": 42}}`)
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'dead', attempts = 1, last_error = 'gone' WHERE id = $1`, dead)

	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", nil)
	if code != 200 {
		t.Fatalf("/api/status: %d %s", code, body)
	}
	var st struct {
		Ordering struct {
			Providers []struct {
				Provider   string  `json:"provider"`
				KeyPath    string  `json:"key_path"`
				OrderPath  *string `json:"order_path"`
				DeadBlocks bool    `json:"dead_blocks"`
				Blocked    int64   `json:"blocked_sequences"`
				Waiting    int64   `json:"waiting_events"`
			} `json:"providers"`
			Blocked []struct {
				Provider  string  `json:"provider"`
				Key       string  `json:"sequence_key"`
				HeadID    int64   `json:"head_event_id"`
				Status    string  `json:"head_status"`
				LastError *string `json:"last_error"`
				Waiting   int64   `json:"waiting_events"`
			} `json:"blocked"`
		} `json:"ordering"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	o := st.Ordering
	if len(st.Errors) > 0 || len(o.Providers) != 2 || o.Providers[0].Provider != "gh" || o.Providers[0].Blocked != 0 || o.Providers[0].DeadBlocks ||
		o.Providers[1].Provider != "stripe" || o.Providers[1].KeyPath != "$.data.object.customer" || o.Providers[1].OrderPath == nil ||
		*o.Providers[1].OrderPath != "$.created" || !o.Providers[1].DeadBlocks || o.Providers[1].Blocked != 1 || o.Providers[1].Waiting != 2 {
		t.Fatalf("ordering providers %+v (errors %v)", o.Providers, st.Errors)
	}
	if len(o.Blocked) != 1 || o.Blocked[0].HeadID != head || o.Blocked[0].Key != "cus_7" || o.Blocked[0].Status != "pending" ||
		o.Blocked[0].Waiting != 2 || o.Blocked[0].LastError == nil || !strings.Contains(*o.Blocked[0].LastError, "price_9") {
		t.Fatalf("blocked %+v, want cus_7 on head %d", o.Blocked, head)
	}

	_, _, page := adminDo(t, nil, "GET", srv.Admin+"/", "", "", nil)
	for _, want := range []string{`id="ordering"`, `data-provider="stripe"`, "$.data.object.customer", `id="blocked-sequences"`,
		fmt.Sprintf(`<a href="/events/%d" class="head-link">#%d</a>`, head, head), "cus_7", "plan price_9 not found"} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	// The click: the head's page with its error.
	_, _, page = adminDo(t, nil, "GET", fmt.Sprintf("%s/events/%d", srv.Admin, head), "", "", nil)
	if !strings.Contains(page, `id="event-sequence"`) || !strings.Contains(page, "cus_7") || !strings.Contains(page, "plan price_9 not found") ||
		strings.Contains(page, `id="sequence-head"`) {
		t.Errorf("the head's page lacks its sequence or its error, or says it waits on another")
	}
	// A waiting event links to the head it waits on.
	_, _, page = adminDo(t, nil, "GET", fmt.Sprintf("%s/events/%d", srv.Admin, waiting), "", "", nil)
	if !strings.Contains(page, fmt.Sprintf(`<a href="/events/%d" id="sequence-head">#%d</a>`, head, head)) || !strings.Contains(page, "waiting") {
		t.Errorf("the waiting event's page does not link to its head %d", head)
	}
	code, _, body = adminDo(t, nil, "GET", fmt.Sprintf("%s/api/events/%d", srv.Admin, waiting), "", "", nil)
	var d struct {
		OrderKey     *string `json:"order_key"`
		OrderHeld    bool    `json:"order_held"`
		SequenceHead *int64  `json:"sequence_head_id"`
	}
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil || d.OrderKey == nil || *d.OrderKey != "cus_7" || !d.OrderHeld ||
		d.SequenceHead == nil || *d.SequenceHead != head {
		t.Fatalf("/api/events/%d: %d %s", waiting, code, body)
	}
}
