package tests

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpProxy forwards loopback connections to a target. Freeze makes every
// connection open at that moment stop forwarding in both directions without
// closing (a half-open link); later connections work normally.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*proxied
	frozen atomic.Int32
}

type proxied struct {
	frozen atomic.Bool
	a, b   net.Conn
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(p.Close)
	go p.accept()
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{a: c, b: up}
		p.mu.Lock()
		p.conns = append(p.conns, pc)
		p.mu.Unlock()
		go pc.pipe(c, up)
		go pc.pipe(up, c)
	}
}

// pipe copies until an error; while frozen it reads nothing (the kernel
// buffers fill, the peer sees silence, nobody sees a close).
func (pc *proxied) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		for pc.frozen.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		_ = src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := src.Read(buf)
		if n > 0 && !pc.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// Freeze half-opens every connection open now and returns how many.
func (p *tcpProxy) Freeze() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.frozen.Store(true)
	}
	return len(p.conns)
}

// Close stops the proxy and drops every connection.
func (p *tcpProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.a.Close()
		c.b.Close()
	}
}
