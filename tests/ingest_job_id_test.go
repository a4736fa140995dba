package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
)

// hugeJobID is a job_id no B-tree entry can hold: 6,400 bytes of random
// text, which neither the heap nor an index compresses below the limit.
func hugeJobID() string { return randomText(6400, letters) }

// TestIngestHugeJobID: a terminal job event whose payload's job_id is
// 6.4 kB of random text is stored like any other, by ingest_webhook() and
// by ingest_batch() beside a neighbour with a short job id, each created.
// Before, events_job_terminal_idx held the job id in full and the INSERT
// failed with SQLSTATE 54000 (index row size): the delivery was answered
// 400 and lost (its sender retried it for ever, refused each time).
func TestIngestHugeJobID(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	one, two := hugeJobID(), hugeJobID()

	if _, outcome := ingest(t, pool, "jobs", "evt-1", "job.completed",
		`{"job_id": "`+one+`", "status": "COMPLETED"}`); outcome != "created" {
		t.Fatalf("ingest_webhook: %s, want created", outcome)
	}
	got := ingestBatch(t, pool, []batchInput{
		{provider: "jobs", key: "evt-2", eventType: "job.failed", payload: `{"job_id": "` + two + `", "status": "ERROR", "error": {"code": "oom"}}`},
		{provider: "jobs", key: "evt-3", eventType: "job.completed", payload: `{"job_id": "job-3", "status": "COMPLETED"}`},
	})
	for i, r := range got {
		if r.outcome != "created" {
			t.Errorf("ingest_batch element %d: %s %s, want created", i+1, r.outcome, r.refused)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'jobs'
		AND ((external_id = 'evt-1' AND payload ->> 'job_id' = $1) OR (external_id = 'evt-2' AND payload ->> 'job_id' = $2)
		     OR (external_id = 'evt-3' AND payload ->> 'job_id' = 'job-3'))`, one, two); n != 3 {
		t.Fatalf("%d of the 3 events stored with their job_id", n)
	}
}

// TestIngestHugeJobIDThroughRunner: the same delivery signed and sent to
// pginbox serve (a Standard Webhooks provider, whose key is the webhook-id
// header and whose type is the payload's "type") is answered 200 and
// stored. Before, the runner answered 400 and stored nothing.
func TestIngestHugeJobIDThroughRunner(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	srv := startServer(t, conf.URL(), runner.Config{}, map[string][2]string{"jobs": {"standardwebhooks", secret}})
	job := hugeJobID()
	body := `{"type": "job.completed", "job_id": "` + job + `", "status": "COMPLETED"}`
	code, resp := postRaw(t, srv.Base+"/webhooks/jobs", testsign.StandardWebhooks(secret, "msg_huge", body, time.Now()), body)
	if code != http.StatusOK {
		t.Fatalf("POST: %d %s, want 200", code, resp)
	}
	pool := PoolFor(t, conf.URL(), 1)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'jobs' AND external_id = 'msg_huge'
		AND event_type = 'job.completed' AND payload ->> 'job_id' = $1`, job); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

// TestReconcileHugeJobIDUnchecked: reconcile() still flags a second
// terminal event for a job with a normal id, and does not compare terminal
// events whose job_id is over 255 bytes (the index holds no such id): two of
// them with the same 6.4 kB job_id are not flagged, and the pass counts them
// in jobs_unchecked. Before, neither event could be stored (54000).
func TestReconcileHugeJobIDUnchecked(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	big := hugeJobID()
	ingest(t, pool, "sume", "job-1", "job.completed", `{"job_id": "job-1", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-1b", "job.failed", `{"job_id": "job-1", "status": "ERROR", "error": {"code": "x"}}`)
	// 255 bytes is still a job id; 256 is not.
	at255 := strings.Repeat("j", 255)
	ingest(t, pool, "sume", "evt-255a", "job.completed", `{"job_id": "`+at255+`", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-255b", "job.completed", `{"job_id": "`+at255+`", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-256a", "job.completed", `{"job_id": "`+at255+`j", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-256b", "job.completed", `{"job_id": "`+at255+`j", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-big-a", "job.completed", `{"job_id": "`+big+`", "status": "COMPLETED"}`)
	ingest(t, pool, "sume", "evt-big-b", "job.failed", `{"job_id": "`+big+`", "status": "ERROR", "error": {"code": "x"}}`)

	r, m := reconcileOn(t, pool, `webhooks.reconcile()`)
	if r.Contradictions["duplicate_terminal"] != 2 {
		t.Errorf("duplicate_terminal %d, want 2 (evt-1b, evt-255b)", r.Contradictions["duplicate_terminal"])
	}
	if got, _ := m["jobs_unchecked"].(float64); got != 4 {
		t.Errorf("jobs_unchecked %v, want 4", m["jobs_unchecked"])
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.contradictions AS k JOIN webhooks.events AS e ON e.id = k.event_id
		WHERE k.kind = 'duplicate_terminal' AND e.external_id IN ('evt-1b', 'evt-255b')`); n != 2 {
		t.Fatalf("%d of the 2 duplicates flagged on the later event", n)
	}
	var recorded int64
	if err := pool.QueryRow(context.Background(), `SELECT (counts ->> 'jobs_unchecked')::bigint FROM webhooks.reconcile_runs
		WHERE id = $1`, r.RunID).Scan(&recorded); err != nil || recorded != 4 {
		t.Fatalf("reconcile_runs.counts jobs_unchecked %d (%v), want 4", recorded, err)
	}
}

// TestPlanDuplicateTerminalUsesJobIndex: reconcile()'s duplicate_terminal
// look-up reads events_job_terminal_job_idx (written with the index's exact
// expression), not the whole table, among 20,000 terminal job events; and
// it still finds the duplicate. The plan is the function's own statement's,
// as auto_explain logs it.
func TestPlanDuplicateTerminalUsesJobIndex(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, received_at)
		SELECT 'sume', 'job-' || i, 'job.completed', jsonb_build_object('job_id', 'job-' || i, 'status', 'COMPLETED'),
		       now() - interval '1 day'
		FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)
	ingest(t, pool, "sume", "evt-again", "job.failed", `{"job_id": "job-17", "status": "ERROR", "error": {"code": "x"}}`)

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`)
	var found []byte
	if err := c.QueryRow(ctx, `SELECT webhooks._record_contradictions(now() - interval '1 hour')`).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(found), `"duplicate_terminal": 1`) {
		t.Fatalf("_record_contradictions: %s, want one duplicate_terminal", found)
	}
	var plan string
	for _, n := range notes() {
		if strings.Contains(n, "duplicate_terminal") && strings.Contains(n, "Plan") {
			plan = n
		}
	}
	if plan == "" {
		t.Fatalf("auto_explain logged no plan of the contradictions statement:\n%s", strings.Join(notes(), "\n"))
	}
	if !strings.Contains(plan, "events_job_terminal_job_idx") {
		t.Fatalf("the duplicate_terminal look-up does not use events_job_terminal_job_idx:\n%s", plan)
	}
}
