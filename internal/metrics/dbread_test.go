package metrics_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestMain stops the throwaway Postgres cluster the harness may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// TestScrapesShareOneDatabaseRead: 40 scrapes at once, on a pool of two
// connections like the console's, never hold more than one connection at a
// time (the other stays for the console's pages), and run fewer database
// reads than scrapes; every scrape still carries the queue gauges.
func TestScrapesShareOneDatabaseRead(t *testing.T) {
	t.Parallel()
	pc, err := pgxpool.ParseConfig(pgtest.NewConfig(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	set := metrics.New(pool)
	stop := make(chan struct{})
	const scrapers, rounds = 40, 5
	var wg sync.WaitGroup
	var missing atomic.Int64
	for i := 0; i < scrapers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				mfs, err := set.Registry.Gather()
				if err != nil {
					t.Errorf("gather: %v", err)
					return
				}
				found := false
				for _, mf := range mfs {
					found = found || mf.GetName() == "pginbox_queue_depth"
				}
				if !found {
					missing.Add(1)
				}
			}
		}()
	}
	// How many connections the scrapes hold at once, sampled meanwhile.
	done := make(chan struct{})
	var maxHeld atomic.Int64
	go func() {
		defer close(done)
		for {
			if n := int64(pool.Stat().AcquiredConns()); n > maxHeld.Load() {
				maxHeld.Store(n)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	acquires := pool.Stat().AcquireCount()
	t.Logf("%d scrapes: %d connection acquisitions, at most %d connections held at once", scrapers*rounds, acquires, maxHeld.Load())
	if missing.Load() > 0 {
		t.Errorf("%d scrapes lacked the queue gauges", missing.Load())
	}
	if maxHeld.Load() > 1 {
		t.Errorf("the scrapes held %d connections at once, want at most 1 (one shared read)", maxHeld.Load())
	}
	if acquires >= scrapers*rounds {
		t.Errorf("%d acquisitions for %d scrapes: the scrapes did not share their reads", acquires, scrapers*rounds)
	}
}
