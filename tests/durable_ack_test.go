package tests

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestAckedDeliveriesSurviveAServerCrash: the server's default is
// synchronous_commit = off with the WAL writer asleep for 10 s, so a commit
// that does not ask for its flush stays in shared memory. Deliveries are
// acknowledged over HTTP, then every Postgres process is killed with
// SIGKILL right after the last 200, and the cluster restarts (crash
// recovery): every acknowledged delivery must be there, because the ingest
// raises synchronous_commit for its own transaction — each delivery alone,
// and with group commit (32 senders: deliveries share batches, which the
// batch-size histogram shows).
func TestAckedDeliveriesSurviveAServerCrash(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	for _, tc := range []struct {
		name  string
		batch int
	}{{"alone", 1}, {"group commit", 64}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ackedSurviveCrash(t, tc.batch)
		})
	}
}

func ackedSurviveCrash(t *testing.T, batch int) {
	c, url := ownCluster(t, map[string]string{"synchronous_commit": "off", "wal_writer_delay": "10s"}, true)
	pool := PoolFor(t, url, 2)
	if got := queryInt(t, pool, `SELECT (current_setting('synchronous_commit') = 'off')::int`); got != 1 {
		t.Fatalf("server default synchronous_commit is not off")
	}
	srv := startServer(t, url, runner.Config{IngestTimeout: 5 * time.Second, IngestBatch: batch}, sumeOnly)
	// The setup's WAL reaches the disk, so what follows is only the
	// deliveries' own.
	execSQL(t, pool, `CHECKPOINT`)
	pool.Close()
	const n, senders = 400, 32
	client := &http.Client{Timeout: 10 * time.Second}
	keys := make(chan string, n)
	for i := 0; i < n; i++ {
		keys <- fmt.Sprintf("durable_%04d", i)
	}
	close(keys)
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if status, _ := deliver(client, srv.Base, k); status == 200 {
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if batch > 1 {
		batches, stored := metricValue(t, srv.Admin, "pginbox_ingest_batch_size_count"), metricValue(t, srv.Admin, "pginbox_ingest_batch_size_sum")
		if batches == 0 || stored <= batches {
			t.Fatalf("%d deliveries in %d batches: no delivery shared a commit, the crash tests nothing new", stored, batches)
		}
		t.Logf("%d deliveries in %d batches", stored, batches)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	if len(acked) != n {
		t.Fatalf("only %d of %d deliveries acknowledged before the crash", len(acked), n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	pool = PoolFor(t, url, 2)
	stored := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sume' AND external_id = ANY($1)`, acked)
	t.Logf("acknowledged %d, stored after the crash %d", len(acked), stored)
	if stored != int64(len(acked)) {
		t.Fatalf("%d acknowledged deliveries lost in the crash", int64(len(acked))-stored)
	}
}
