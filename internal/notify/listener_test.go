package notify_test

import (
	"context"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/notify"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// wakeups records what the listener called its events function with.
type wakeups chan string

// next waits for the next call, and fails t unless it says want.
func (w wakeups) next(t *testing.T, want string, within time.Duration) {
	t.Helper()
	select {
	case got := <-w:
		if got != want {
			t.Fatalf("the listener called with %q, want %q", got, want)
		}
	case <-time.After(within):
		t.Fatalf("no %q call within %v", want, within)
	}
}

// startListener runs a Listener on dbURL with pings every pingEvery
// (negative: none) until the test ends; its calls go to the wakeups.
func startListener(t *testing.T, dbURL string, pool *pgxpool.Pool, pingEvery time.Duration) (wakeups, *metrics.Set) {
	t.Helper()
	w := make(wakeups, 100)
	m := metrics.New(pool)
	l := &notify.Listener{
		URL:            dbURL,
		Channels:       map[string]func(string){notify.EventsChannel: func(source string) { w <- source }},
		Pool:           pool,
		ReconnectDelay: 100 * time.Millisecond,
		PingEvery:      pingEvery,
		PingTimeout:    300 * time.Millisecond,
		Metrics:        m,
		Log:            slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w, m
}

// TestListenerReconnects: the listener calls "backlog" once connected and
// "notify" on each NOTIFY webhooks_events; when its backend is terminated
// it connects again (a second "backlog", the connect counted twice) and
// hears the NOTIFYs sent after.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	cfg := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, cfg.URL(), 2)
	w, m := startListener(t, cfg.URL(), pool, -1)
	w.next(t, "backlog", 10*time.Second)
	pgtest.Exec(t, pool, `SELECT pg_notify('webhooks_events', '')`)
	w.next(t, "notify", 5*time.Second)

	// Terminating the listener's backend takes the server's own user.
	super := pgtest.PoolFor(t, pgtest.SuperuserURL(t, cfg.Database), 1)
	var pid int32
	if err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'pginbox-listener'`).Scan(&pid); err != nil {
		t.Fatalf("the listener's backend: %v", err)
	}
	var killed bool
	if err := super.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the listener's backend %d: %t, %v", pid, killed, err)
	}
	w.next(t, "backlog", 10*time.Second)
	if c := counter(t, m.ListenerConnects); c != 2 {
		t.Errorf("pginbox_listener_connects_total = %v, want 2", c)
	}
	pgtest.Exec(t, pool, `SELECT pg_notify('webhooks_events', '')`)
	w.next(t, "notify", 5*time.Second)
}

// TestListenerReplacesHalfOpenConnection: when the listener's connection
// stops carrying anything without closing (a network path that died, a
// frozen proxy), the listener's own ping does not come back in time and it
// connects again; new NOTIFYs reach it over the new connection.
func TestListenerReplacesHalfOpenConnection(t *testing.T) {
	t.Parallel()
	cfg := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, cfg.URL(), 2)
	u, err := url.Parse(cfg.URL())
	if err != nil {
		t.Fatal(err)
	}
	p := pgtest.StartFreezeProxy(t, u.Host)
	w, m := startListener(t, p.Through(t, cfg.URL()), pool, 200*time.Millisecond)
	w.next(t, "backlog", 10*time.Second)

	p.Freeze()
	w.next(t, "backlog", 10*time.Second)
	if c := counter(t, m.ListenerConnects); c != 2 {
		t.Errorf("pginbox_listener_connects_total = %v, want 2", c)
	}
	pgtest.Exec(t, pool, `SELECT pg_notify('webhooks_events', '')`)
	w.next(t, "notify", 5*time.Second)
}
