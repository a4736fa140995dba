package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/retention"
	"github.com/pginbox/pginbox/runner"
)

// TestRetentionRedeliveryStillDuplicate: the runner's retention drops
// payloads of old processed events in batches but keeps their keys, so a
// provider's late redelivery is still answered as a duplicate; rows past
// keep_keys go.
func TestRetentionRedeliveryStillDuplicate(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
		SELECT 'sume', 'old_' || g, 'job.completed', '{}', 'processed', now() - interval '40 days', now() - interval '40 days'
		FROM generate_series(1, 12000) g`)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
		VALUES ('sume', 'ancient', 'job.completed', '{}', 'processed', now() - interval '500 days', now() - interval '500 days')`)

	rep, err := retention.Prune(context.Background(), pool, 30*24*time.Hour, 400*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PayloadsPruned != 12001 || rep.EventsDeleted != 1 || rep.Calls < 3 {
		t.Fatalf("prune report %+v: want 12001 payloads in several short calls and 1 event", rep)
	}
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	body := sampleBody("sume", "old_7")
	status, out := post(t, &http.Client{Timeout: 10 * time.Second}, srv.Base+"/webhooks/sume", signSume(sumeSecret, body, time.Now()), []byte(body))
	if status != 200 || out["outcome"] != "duplicate" {
		t.Fatalf("redelivery after payload pruning: %d %v, want duplicate", status, out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'old_7' AND payload IS NULL`); n != 1 {
		t.Fatal("the duplicate rewrote the pruned row")
	}
}
