package notify_test

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
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
	p := startFreezer(t, cfg.URL())
	w, m := startListener(t, p.url, pool, 200*time.Millisecond)
	w.next(t, "backlog", 10*time.Second)

	p.freezeAll()
	w.next(t, "backlog", 10*time.Second)
	if c := counter(t, m.ListenerConnects); c != 2 {
		t.Errorf("pginbox_listener_connects_total = %v, want 2", c)
	}
	pgtest.Exec(t, pool, `SELECT pg_notify('webhooks_events', '')`)
	w.next(t, "notify", 5*time.Second)
}

// freezer is a TCP proxy in front of PostgreSQL whose connections can be
// frozen: bytes are then dropped both ways and nothing is closed, as on a
// dead network path. New connections pass.
type freezer struct {
	url   string
	ln    net.Listener
	mu    sync.Mutex
	all   []*atomic.Bool
	conns []net.Conn
}

// startFreezer proxies dbURL's server; url is dbURL through the proxy.
func startFreezer(t *testing.T, dbURL string) *freezer {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	f := &freezer{url: u.String(), ln: ln}
	// Before the database is dropped: a frozen connection would hold it.
	t.Cleanup(func() {
		_ = ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			frozen := new(atomic.Bool)
			f.mu.Lock()
			f.all = append(f.all, frozen)
			f.conns = append(f.conns, c, s)
			f.mu.Unlock()
			go pipe(c, s, frozen)
			go pipe(s, c, frozen)
		}
	}()
	return f
}

// freezeAll freezes every connection open now.
func (f *freezer) freezeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fr := range f.all {
		fr.Store(true)
	}
}

// pipe copies src to dst until either ends, dropping what it reads while
// frozen.
func pipe(dst, src net.Conn, frozen *atomic.Bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
