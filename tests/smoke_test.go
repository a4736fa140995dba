package tests

import (
	"context"
	"testing"
)

func TestSmokeIngest(t *testing.T) {
	t.Parallel()
	db := NewDB(t)
	var id int64
	var outcome string
	if err := db.QueryRowContext(context.Background(),
		`SELECT event_id, outcome FROM webhooks.ingest_webhook('sume', 'job_1', 'job.completed', '{"a":1}')`).Scan(&id, &outcome); err != nil {
		t.Fatal(err)
	}
	if outcome != "created" {
		t.Fatalf("outcome = %q", outcome)
	}
}
