package reader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// DefaultMaxConns is TCP.MaxConns when zero. A gate has one or two IP
// readers; the rest is room for reconnects before old connections time out.
const DefaultMaxConns = 16

// TCP reads scans as text lines from IP readers that connect to a port:
// one line, one scan, from any number of connections at once.
type TCP struct {
	o  Options
	ln net.Listener
	// MaxConns bounds the connections served at once; a connection over
	// it is closed at once and logged. 0 means DefaultMaxConns.
	MaxConns int
}

// ListenTCP listens on addr (host:port; port 0 picks one, see Addr) now,
// so that a port in use fails the appliance's start rather than a later
// Run. Run serves it.
func ListenTCP(addr string, o Options) (*TCP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp reader: %w", err)
	}
	return &TCP{o: o.withDefaults("tcp"), ln: ln}, nil
}

// Close closes the listener; for a reader that will not Run (Run closes
// it when it returns).
func (t *TCP) Close() error { return t.ln.Close() }

// Addr is the address listened on.
func (t *TCP) Addr() net.Addr { return t.ln.Addr() }

// Run accepts connections and reads their lines until ctx ends, then
// closes the listener and every connection and returns nil once each
// connection's last Deliver has returned. It returns the listener's error
// if accepting fails for another reason. Call it once.
func (t *TCP) Run(ctx context.Context) error {
	maxConns := t.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		_ = t.ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()

	t.o.Logger.Info("tcp reader listening", "addr", t.ln.Addr().String())
	delay := time.Duration(0)
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second) // as net/http does
				t.o.Logger.Warn("tcp reader: accept failed; retrying", "error", err.Error(), "retry_in", delay)
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return nil
				}
				continue
			}
			_ = t.ln.Close()
			return fmt.Errorf("tcp reader %s: %w", t.ln.Addr(), err)
		}
		delay = 0
		remote := c.RemoteAddr().String()
		mu.Lock()
		if len(conns) >= maxConns || ctx.Err() != nil {
			mu.Unlock()
			t.o.Logger.Warn("tcp reader: connection refused: too many", "remote", remote, "limit", maxConns)
			_ = c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				_ = c.Close()
			}()
			t.o.Logger.Info("tcp reader: connected", "remote", remote)
			err := readLines(ctx, c, t.o, "remote", remote)
			if !errors.Is(err, io.EOF) && ctx.Err() == nil { // readLines returns only when r fails
				t.o.Logger.Warn("tcp reader: connection failed", "remote", remote, "error", err.Error())
				return
			}
			t.o.Logger.Info("tcp reader: disconnected", "remote", remote)
		})
	}
}
