package postgrestest

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server and can be paused: while
// paused it accepts connections and reads what arrives, but forwards
// nothing in either direction and closes nothing, as a stalled network
// or a hung server would look to a client.
type Proxy struct {
	Addr string // host:port to connect to instead of the target

	mu     sync.Mutex
	paused bool
	resume chan struct{} // closed on Resume
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), resume: make(chan struct{})}
	close(p.resume)
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); p.pipe(up, c) }()
			go func() { defer conns.Done(); p.pipe(c, up) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.Resume()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return p
}

// pipe copies from src to dst, holding each chunk while paused.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) wait() {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	<-ch
}

// Pause stops forwarding.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resume = true, make(chan struct{})
	}
}

// Resume forwards again, what was held first.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}
