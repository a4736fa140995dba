package pgtest

import (
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FreezeProxy forwards loopback TCP connections to a target. Freeze makes
// every connection open at that moment stop forwarding in both directions
// without closing either side: the peers see silence, never a close, as
// across a network partition (a half-open link). Later connections work
// normally.
type FreezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*frozenConn
}

type frozenConn struct {
	frozen, closed atomic.Bool
	a, b           net.Conn
}

// StartFreezeProxy listens on a free loopback port and forwards to target
// (host:port); it is closed when t ends, before cleanups registered earlier
// (such as the test database's drop, which a frozen connection would hold).
func StartFreezeProxy(t testing.TB, target string) *FreezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FreezeProxy{ln: ln, target: target}
	t.Cleanup(p.Close)
	go p.accept()
	return p
}

// Addr is the proxy's host:port.
func (p *FreezeProxy) Addr() string { return p.ln.Addr().String() }

// Through returns dbURL with its host and port replaced by the proxy's.
func (p *FreezeProxy) Through(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

func (p *FreezeProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		fc := &frozenConn{a: c, b: up}
		p.mu.Lock()
		p.conns = append(p.conns, fc)
		p.mu.Unlock()
		go fc.pipe(c, up)
		go fc.pipe(up, c)
	}
}

// pipe copies src to dst; once frozen it reads nothing more (the kernel
// buffers fill) and never closes dst, whatever src does.
func (fc *frozenConn) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		for fc.frozen.Load() {
			if fc.closed.Load() {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := src.Read(buf)
		if n > 0 && !fc.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if !fc.frozen.Load() {
				_ = dst.Close()
			}
			return
		}
	}
}

// Freeze half-opens every connection open now and returns how many.
func (p *FreezeProxy) Freeze() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.frozen.Store(true)
	}
	return len(p.conns)
}

// Close stops the proxy and drops every connection.
func (p *FreezeProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.closed.Store(true)
		_ = c.a.Close()
		_ = c.b.Close()
	}
}
