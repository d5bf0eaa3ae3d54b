package httpapi

import (
	"cmp"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Defaults of ServerLimits (docs/decisions.md, "Hardening (issue 15)").
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConnsPerAddr   = 64
)

// ServerLimits bound what one client can hold of the server: how long a
// request may take to arrive, how long its response may take to go out, how
// long an idle connection is kept, and how many connections one client
// address may have open at once. Zero fields take the defaults.
type ServerLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, from its
	// first byte: a body trickled slower than this is cut off (the
	// operation answers 400 bad_request, and the connection is closed).
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request's headers to
	// the end of the response.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection.
	IdleTimeout time.Duration
	// MaxConnsPerAddr is how many connections one client address (an IPv4
	// address, an IPv6 /64) may have open at once; further ones are closed
	// as soon as they are accepted. Negative means no limit.
	MaxConnsPerAddr int
	// Exempt are addresses the connection limit does not apply to: the
	// trusted proxies, through which every client comes.
	Exempt []netip.Prefix
}

func (l ServerLimits) withDefaults() ServerLimits {
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, DefaultReadTimeout)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, DefaultWriteTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, DefaultIdleTimeout)
	l.MaxConnsPerAddr = cmp.Or(l.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	l.ReadHeaderTimeout = min(l.ReadHeaderTimeout, l.ReadTimeout)
	return l
}

// NewHTTPServer returns the http.Server that serves h under the limits'
// timeouts; serve it on Listen's listener for the connection limit.
func NewHTTPServer(h http.Handler, l ServerLimits, errorLog *log.Logger) *http.Server {
	l = l.withDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, ErrorLog: errorLog}
}

// Listen wraps ln so that one client address has at most the limits'
// MaxConnsPerAddr connections open at once: a connection beyond that is
// closed as soon as it is accepted, before anything is read from it, so a
// client holding many connections (slowly, or idle) cannot take the
// server's from everyone else. Addresses in Exempt are not limited.
func Listen(ln net.Listener, l ServerLimits) net.Listener {
	l = l.withDefaults()
	if l.MaxConnsPerAddr < 0 {
		return ln
	}
	return &limitListener{Listener: ln, max: l.MaxConnsPerAddr, exempt: clientAddrs{trusted: slices.Clone(l.Exempt)}, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	max    int
	exempt clientAddrs

	mu   sync.Mutex
	open map[string]int // connections open per client address (addressBucket)
}

// Accept returns the next connection its address may open, closing the
// ones it may not.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a := peerAddr(c.RemoteAddr().String())
		if l.exempt.isTrusted(a) {
			return c, nil
		}
		key := addressBucket(a)
		l.mu.Lock()
		if l.open[key] >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: sync.OnceFunc(func() { l.release(key) })}, nil
	}
}

func (l *limitListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// limitedConn gives its address's place back when closed.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
