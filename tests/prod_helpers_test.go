package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// ownCluster starts a cluster of the test's own with settings over the test
// settings, removed when the test ends, and returns it with a superuser URL
// on its database postgres; migrate applies pginbox's migrations there.
func ownCluster(t *testing.T, settings map[string]string, migrate bool) (*localpg.Cluster, string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgtest.StartClusterWith(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopMode(context.Background(), "immediate"); _ = c.Remove() })
	url := c.URL("postgres")
	if migrate {
		pool := PoolFor(t, url, 2)
		db := stdlib.OpenDBFromPool(pool)
		if err := pginbox.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		db.Close()
		pool.Close()
	}
	return c, url
}

// deliver sends one signed Sume delivery for key and returns the status
// (0 on a transport error) and how long the answer took.
func deliver(client *http.Client, base, key string) (int, time.Duration) {
	body := sampleBody("sume", key)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/sume", stringsReader(body))
	req.Header = signSume(sumeSecret, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	took := time.Since(start)
	if err != nil {
		return 0, took
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, took
}

// hostList is a multi-host URL over the clusters' ports, database postgres,
// asking for the server that takes writes.
func hostList(cs ...*localpg.Cluster) string {
	hosts := ""
	for i, c := range cs {
		if i > 0 {
			hosts += ","
		}
		hosts += fmt.Sprintf("127.0.0.1:%d", c.Port)
	}
	return "postgres://" + localpg.Superuser + "@" + hosts + "/postgres?sslmode=disable&target_session_attrs=read-write"
}
