package tests

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestReadOnlyServerConnectionsRecycled: DATABASE_URL lists servers A and B
// with target_session_attrs=read-write; pginbox's connections are on A when
// A stops taking writes without dropping them (default_transaction_read_only
// turned on and reloaded, as a demoted primary or a provider's read-only
// switch does). The ingest fails with 25006 read_only_sql_transaction;
// pginbox must drop such a connection rather than reuse it, so the pool's
// next connection lands on B and deliveries are taken again — instead of a
// 503 on the same connection forever. /readyz follows too.
func TestReadOnlyServerConnectionsRecycled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	a, aURL := ownCluster(t, nil, true)
	b, bURL := ownCluster(t, nil, true)
	srv := startServer(t, hostList(a, b), runner.Config{IngestTimeout: 5 * time.Second}, sumeOnly)
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 5; i++ {
		if status, _ := deliver(client, srv.Base, fmt.Sprintf("before_%d", i)); status != 200 {
			t.Fatalf("delivery before: %d", status)
		}
	}
	poolA := PoolFor(t, aURL, 2)
	poolB := PoolFor(t, bURL, 2)
	if got := queryInt(t, poolA, `SELECT count(*) FROM webhooks.events`); got != 5 {
		t.Fatalf("server A has %d events, want the 5 first deliveries", got)
	}
	execSQL(t, poolA, `ALTER SYSTEM SET default_transaction_read_only = on`)
	execSQL(t, poolA, `SELECT pg_reload_conf()`)
	waitFor(t, 10*time.Second, "server A read-only", func() bool {
		return queryInt(t, PoolFor(t, aURL, 1), `SELECT current_setting('transaction_read_only')::boolean::int`) == 1
	})
	time.Sleep(300 * time.Millisecond) // every backend has read the new setting
	statuses := map[int]int{}
	firstOK := -1
	const n = 40
	for i := 0; i < n; i++ {
		status, _ := deliver(client, srv.Base, fmt.Sprintf("after_%d", i))
		statuses[status]++
		if status == 200 && firstOK < 0 {
			firstOK = i
		}
	}
	onB := queryInt(t, poolB, `SELECT count(*) FROM webhooks.events WHERE external_id LIKE 'after_%'`)
	t.Logf("after A turned read-only: answers %v, first 2xx at delivery %d, %d stored on B", statuses, firstOK, onB)
	if firstOK < 0 || statuses[200] < n-20 {
		t.Fatalf("deliveries after A turned read-only: %v — the read-only connections were reused instead of recycled", statuses)
	}
	if onB != int64(statuses[200]) {
		t.Fatalf("B holds %d of the %d acknowledged deliveries", onB, statuses[200])
	}
	waitFor(t, 10*time.Second, "/readyz on B", func() bool { return httpStatus(t, srv.Base+"/readyz") == 200 })
}
