package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgxlisten"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/metrics"
)

// The channels pginbox notifies on.
const (
	// EventsChannel wakes workers: events were stored (the coalesced
	// NOTIFY a [Notifier] sends, or another stack's).
	EventsChannel = "webhooks_events"
	// ReconcileChannel asks for a reconcile pass now.
	ReconcileChannel = "webhooks_reconcile"
	// pingChannel carries the listener's own liveness pings.
	pingChannel = "webhooks_ping"
)

// Listener LISTENs on a direct connection (pgxlisten) and calls a function
// per channel on each notification and after each (re)connect, when work may
// have piled up unseen. Handlers only signal; they never block the listener.
//
// pgxlisten has no heartbeat, so a half-open connection would hang silently:
// every PingEvery the listener sends itself a NOTIFY through the pool and,
// when it does not come back within PingTimeout, drops the connection and
// reconnects. Workers also poll, so a dead listener delays work by at most
// the poll interval and loses nothing.
type Listener struct {
	// URL is the direct connection string (not through a transaction pooler).
	URL string
	// Channels maps channel names to what to do on a notification.
	Channels map[string]func(source string)
	// Pool sends the liveness pings.
	Pool *pgxpool.Pool
	// ReconnectDelay is the pause before reconnecting. Default 1s.
	ReconnectDelay time.Duration
	// PingEvery is the liveness ping period. Default 10s; negative disables.
	PingEvery time.Duration
	// PingTimeout is how long a ping may take to come back. Default 5s.
	PingTimeout time.Duration
	// Metrics counts the connections established.
	Metrics *metrics.Set
	// Log receives reconnects and failed pings.
	Log *slog.Logger

	mu      sync.Mutex
	waiting map[string]chan struct{}
}

// Run listens until ctx ends.
func (l *Listener) Run(ctx context.Context) {
	if l.ReconnectDelay == 0 {
		l.ReconnectDelay = time.Second
	}
	if l.PingEvery == 0 {
		l.PingEvery = 10 * time.Second
	}
	if l.PingTimeout == 0 {
		l.PingTimeout = 5 * time.Second
	}
	l.waiting = map[string]chan struct{}{}
	for ctx.Err() == nil {
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.listenOnce(lctx)
		}()
		l.watch(lctx, cancel)
		<-done
		cancel()
		if ctx.Err() == nil {
			l.Log.Warn("listener connection replaced")
		}
	}
}

func (l *Listener) listenOnce(ctx context.Context) {
	pl := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cfg, err := database.ConnConfig(l.URL, "pginbox-listener")
			if err != nil {
				return nil, fmt.Errorf("listener: %w", err)
			}
			// Waiting for a notification runs no statement to cancel: a
			// cancelled wait gives the connection up at once.
			cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
				return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return pgx.ConnectConfig(cctx, cfg)
		},
		ReconnectDelay: l.ReconnectDelay,
		LogError: func(ctx context.Context, err error) {
			if ctx.Err() == nil {
				l.Log.Warn("listener error; reconnecting", "error", err)
			}
		},
	}
	first := true
	for channel, fn := range l.Channels {
		h := &listenHandler{fn: fn}
		if first {
			// One channel counts the connection.
			h.onConnect = l.Metrics.ListenerConnects.Inc
			first = false
		}
		pl.Handle(channel, h)
	}
	pl.Handle(pingChannel, pgxlisten.HandlerFunc(func(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
		l.mu.Lock()
		if ch, ok := l.waiting[n.Payload]; ok {
			close(ch)
			delete(l.waiting, n.Payload)
		}
		l.mu.Unlock()
		return nil
	}))
	_ = pl.Listen(ctx)
}

// watch pings the listener through the pool; a ping that does not come back
// in time cancels the listen context so Run reconnects.
func (l *Listener) watch(ctx context.Context, cancel context.CancelFunc) {
	if l.PingEvery < 0 || l.Pool == nil {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(l.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		token := randomToken()
		ch := make(chan struct{})
		l.mu.Lock()
		l.waiting[token] = ch
		l.mu.Unlock()
		pctx, pcancel := context.WithTimeout(ctx, l.PingTimeout)
		_, err := l.Pool.Exec(pctx, `SELECT pg_notify($1, $2)`, pingChannel, token)
		if err == nil {
			select {
			case <-ch:
			case <-pctx.Done():
				if ctx.Err() == nil {
					l.Log.Warn("listener did not receive its own ping; replacing the connection", "timeout", l.PingTimeout)
					pcancel()
					l.forget(token)
					cancel()
					return
				}
			}
		}
		// A failed send means the database is unreachable: nothing to judge.
		pcancel()
		l.forget(token)
	}
}

func (l *Listener) forget(token string) {
	l.mu.Lock()
	delete(l.waiting, token)
	l.mu.Unlock()
}

// randomToken is a random 16-hex-digit token.
func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// listenHandler signals on notifications and on (re)connect (backlog).
type listenHandler struct {
	fn        func(source string)
	onConnect func()
}

func (h *listenHandler) HandleNotification(context.Context, *pgconn.Notification, *pgx.Conn) error {
	h.fn("notify")
	return nil
}

func (h *listenHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	if h.onConnect != nil {
		h.onConnect()
	}
	h.fn("backlog")
	return nil
}
