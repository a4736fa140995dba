package tests

import (
	"context"
	"encoding/json"
	"testing"
)

// TestPruneKeepsKeys: payloads go after keep_payload, keys only after
// keep_keys, so a late redelivery is still a duplicate.
func TestPruneKeepsKeys(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()

	id, _ := ingest(t, pool, "sume", "job_old", "job.completed", `{"v": 1}`)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', 1)`, id)
	pendingID, _ := ingest(t, pool, "sume", "job_pending", "job.completed", `{"v": 1}`)
	execSQL(t, pool, `UPDATE webhooks.events SET received_at = now() - interval '40 days'`)

	prune := func() map[string]any {
		var raw []byte
		if err := pool.QueryRow(ctx, `SELECT webhooks.prune('30 days', '400 days')`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := prune()
	if got["payloads_pruned"] != 1.0 || got["events_deleted"] != 0.0 || got["more"] != false {
		t.Fatalf("first prune: %v", got)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND payload IS NULL AND payload_pruned_at IS NOT NULL`, id); n != 1 {
		t.Fatal("payload of the old processed event not pruned")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND payload IS NOT NULL`, pendingID); n != 1 {
		t.Fatal("payload of a pending event was pruned")
	}
	// A late redelivery, even with a different payload, is still a duplicate.
	if gotID, outcome := ingest(t, pool, "sume", "job_old", "job.completed", `{"v": 2}`); outcome != "duplicate" || gotID != id {
		t.Fatalf("redelivery after payload pruning: (%d, %q)", gotID, outcome)
	}

	execSQL(t, pool, `UPDATE webhooks.events SET received_at = now() - interval '500 days'`)
	got = prune()
	if got["events_deleted"] != 1.0 {
		t.Fatalf("second prune: %v", got)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 1 {
		t.Fatalf("rows left %d: want only the pending one", n)
	}

	for _, bad := range []struct{ keepPayload, keepKeys, msg string }{
		{"30 days", "30 days", "must be longer than keep_payload"},
		{"30 days", "1 day", "must be longer than keep_payload"},
		{"0", "1 day", "keep_payload must be a positive interval"},
	} {
		_, err := pool.Exec(ctx, `SELECT webhooks.prune($1::interval, $2::interval)`, bad.keepPayload, bad.keepKeys)
		wantPgError(t, err, "22023", bad.msg)
	}
}

// TestPruneBatches: max_rows bounds one call and reports more work.
func TestPruneBatches(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
		SELECT 'p', 'e' || g, 't', '{}', 'processed', now(), now() - interval '40 days' FROM generate_series(1, 25) g`)
	total := 0.0
	for i := 0; ; i++ {
		var raw []byte
		if err := pool.QueryRow(ctx, `SELECT webhooks.prune('30 days', '400 days', batch_size => 4, max_rows => 10)`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		n := out["payloads_pruned"].(float64)
		if n > 10 {
			t.Fatalf("call %d pruned %v rows, over max_rows", i, n)
		}
		total += n
		if out["more"] == false {
			break
		}
		if i > 10 {
			t.Fatal("prune never finished")
		}
	}
	if total != 25 {
		t.Fatalf("pruned %v payloads in all, want 25", total)
	}
}
