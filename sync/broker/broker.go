package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/svc-vms/svc/sync/protocol"
)

// Config configures the embedded broker: a plain listener, a TLS
// listener, or both.
type Config struct {
	// Listen is the plain TCP address to listen on, such as
	// "127.0.0.1:1884", or "" for none; port 0 picks a free one (see
	// Addr). Plain MQTT carries passwords in clear, so it must be a
	// loopback address (protocol.Loopback): edges on a network connect to
	// TLSListen.
	Listen string
	// TLSListen is the address of the MQTT-over-TLS listener, or "" for
	// none; port 0 picks a free one (see TLSAddr).
	TLSListen string
	// TLS holds the TLS listener's certificate (ServerTLS); required with
	// TLSListen.
	TLS *tls.Config
	// Auth says who connecting clients are; required.
	Auth Authenticator
	// Logger receives the broker's logs; nil means slog.Default().
	Logger *slog.Logger
	// AuthTimeout bounds one Authenticate call; 0 means 5 seconds.
	AuthTimeout time.Duration
	// Revoked returns those of the edge IDs given whose credentials are
	// no longer good (the cloud revoked them). The broker asks it every
	// RecheckEvery about the edges it holds a grant for, disconnects
	// those and forgets their grants, so a revoked edge that was connected
	// is not left connected. Nil never asks.
	Revoked func(ctx context.Context, edgeIDs []string) ([]string, error)
	// RecheckEvery is how often Revoked is asked; 0 means 5 seconds.
	RecheckEvery time.Duration
}

// Validate names the first unusable field, wrapping ErrConfig.
func (c Config) Validate() error {
	switch {
	case c.Listen == "" && c.TLSListen == "":
		return fmt.Errorf("%w: Listen and TLSListen are both empty", ErrConfig)
	case c.Listen != "" && !protocol.LoopbackAddr(c.Listen):
		return fmt.Errorf("%w: Listen %q: a plain MQTT listener may bind only to a loopback address (127.0.0.1, ::1, localhost), "+
			"since it carries passwords in clear; edges on a network connect over TLS (TLSListen)", ErrConfig, c.Listen)
	case c.TLSListen != "" && (c.TLS == nil || (len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil)):
		return fmt.Errorf("%w: TLSListen needs TLS with a certificate", ErrConfig)
	case c.Auth == nil:
		return fmt.Errorf("%w: Auth is nil", ErrConfig)
	case c.AuthTimeout < 0:
		return fmt.Errorf("%w: AuthTimeout is negative", ErrConfig)
	case c.RecheckEvery < 0:
		return fmt.Errorf("%w: RecheckEvery is negative", ErrConfig)
	}
	return nil
}

// maxPacket bounds an incoming packet: the largest message plus room for
// its topic and headers.
const maxPacket = protocol.MaxMessage + 4<<10

// Broker is an embedded MQTT 3.1.1/5 broker enforcing the protocol's
// access rules.
type Broker struct {
	srv     *mqtt.Server
	ln      *listeners.TCP // nil without a plain listener
	tlsLn   *listeners.TCP // nil without a TLS listener
	hook    *accessHook
	ran     atomic.Bool
	revoked func(ctx context.Context, edgeIDs []string) ([]string, error)
	every   time.Duration
	log     *slog.Logger
}

// New checks cfg and binds its address, so Addr is known at once. Run
// serves; call it once, and only Run's end releases the address.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "broker")
	if cfg.AuthTimeout == 0 {
		cfg.AuthTimeout = 5 * time.Second
	}
	if cfg.RecheckEvery == 0 {
		cfg.RecheckEvery = 5 * time.Second
	}
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = maxPacket
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, Logger: log})
	h := &accessHook{auth: cfg.Auth, timeout: cfg.AuthTimeout, log: log}
	if err := srv.AddHook(h, nil); err != nil {
		return nil, fmt.Errorf("broker: add access hook: %w", err)
	}
	b := &Broker{srv: srv, hook: h, revoked: cfg.Revoked, every: cfg.RecheckEvery, log: log}
	if cfg.Listen != "" {
		b.ln = listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "tcp", Address: cfg.Listen})
		if err := srv.AddListener(b.ln); err != nil {
			return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Listen, err)
		}
	}
	if cfg.TLSListen != "" {
		tc := cfg.TLS.Clone()
		if tc.MinVersion < tls.VersionTLS12 {
			tc.MinVersion = tls.VersionTLS12
		}
		b.tlsLn = listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "tls", Address: cfg.TLSListen, TLSConfig: tc})
		if err := srv.AddListener(b.tlsLn); err != nil {
			_ = srv.Close()
			return nil, fmt.Errorf("broker: listen on %s: %w", cfg.TLSListen, err)
		}
	}
	return b, nil
}

// Addr is the address the plain listener listens on, as host:port; ""
// without one.
func (b *Broker) Addr() string {
	if b.ln == nil {
		return ""
	}
	return b.ln.Address()
}

// TLSAddr is the address the TLS listener listens on, as host:port; ""
// without one.
func (b *Broker) TLSAddr() string {
	if b.tlsLn == nil {
		return ""
	}
	return b.tlsLn.Address()
}

// Run serves clients until ctx ends, then disconnects them and closes the
// listener. It returns nil after a clean stop, or the error that kept the
// broker from starting.
func (b *Broker) Run(ctx context.Context) error {
	if b.ran.Swap(true) {
		return errors.New("broker: Run called twice")
	}
	b.hook.base = ctx
	if err := b.srv.Serve(); err != nil {
		_ = b.srv.Close()
		return fmt.Errorf("broker: serve: %w", err)
	}
	if b.revoked != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { b.recheck(ctx) })
	}
	<-ctx.Done()
	return b.srv.Close()
}

// recheck asks, every b.every until ctx ends, which of the edges holding
// a grant were revoked, and disconnects them.
func (b *Broker) recheck(ctx context.Context) {
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		edges := b.hook.edges()
		if len(edges) == 0 {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, b.hook.timeout)
		revoked, err := b.revoked(qctx, edges)
		cancel()
		if err != nil {
			b.log.Warn("could not check the connected edges for revocation; asking again later", "error", err)
			continue
		}
		for _, id := range revoked {
			b.disconnect(id)
		}
	}
}

// disconnect ends a revoked edge's connection and forgets its grant, so
// nothing more reaches it, even queued for a persistent session.
func (b *Broker) disconnect(edgeID string) {
	b.hook.revoke(edgeID)
	cl, ok := b.srv.Clients.Get(edgeID)
	if !ok || cl.Closed() {
		return
	}
	b.log.Warn("disconnecting a revoked edge", "edge_id", edgeID, "remote", cl.Net.Remote)
	if cl.Properties.ProtocolVersion == 5 {
		_ = b.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
		return
	}
	cl.Stop(packets.ErrNotAuthorized) // MQTT 3.1.1 has no DISCONNECT from the server: the connection is closed
}

// accessHook authenticates connections and applies each client's Access.
// Accesses are kept per client ID (an edge's is its edge ID) for as long as
// the session may live, since the broker also asks before queueing a
// message for a client that is offline.
type accessHook struct {
	mqtt.HookBase
	auth    Authenticator
	timeout time.Duration
	log     *slog.Logger
	base    context.Context // Run's; set before the listener accepts

	mu      sync.Mutex
	clients map[string]grant
}

type grant struct {
	owner *mqtt.Client // the connection that was granted it
	acc   Access
}

func (h *accessHook) ID() string { return "svc-access" }

func (h *accessHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnDisconnect, mqtt.OnClientExpired}, []byte{b})
}

func (h *accessHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	user := string(pk.Connect.Username)
	log := h.log.With("client", cl.ID, "username", user, "remote", cl.Net.Remote)
	if user == "" {
		log.Info("connection refused: no username")
		return false
	}
	ctx, cancel := context.WithTimeout(h.base, h.timeout)
	defer cancel()
	acc, err := h.auth.Authenticate(ctx, user, string(pk.Connect.Password))
	switch {
	case err != nil:
		log.Info("connection refused: credentials not accepted", "error", err)
		return false
	case !acc.valid():
		log.Warn("connection refused: the authenticator returned an access naming no valid site and edge")
		return false
	case !acc.Cloud && cl.ID != acc.EdgeID:
		log.Info("connection refused: an edge's client ID must be its edge ID", "edge_id", acc.EdgeID)
		return false
	case pk.Connect.WillFlag && !acc.mayWill(pk.Connect.WillTopic):
		log.Info("connection refused: last will on a topic the client may not use", "topic", pk.Connect.WillTopic)
		return false
	}
	h.mu.Lock()
	if h.clients == nil {
		h.clients = make(map[string]grant)
	}
	h.clients[cl.ID] = grant{owner: cl, acc: acc}
	h.mu.Unlock()
	return true
}

func (h *accessHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	h.mu.Lock()
	g, ok := h.clients[cl.ID]
	h.mu.Unlock()
	if !ok {
		return false
	}
	if write {
		ok = g.acc.MayPublish(topic)
	} else {
		ok = g.acc.MaySubscribe(topic)
	}
	if !ok {
		h.log.Info("access refused", "client", cl.ID, "topic", topic, "write", write)
	}
	return ok
}

// OnDisconnect forgets a clean session's access; a persistent session's
// stays until the session expires.
func (h *accessHook) OnDisconnect(cl *mqtt.Client, _ error, expire bool) {
	if expire {
		h.forget(cl)
	}
}

func (h *accessHook) OnClientExpired(cl *mqtt.Client) { h.forget(cl) }

// edges returns the IDs of the edges holding a grant.
func (h *accessHook) edges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, g := range h.clients {
		if !g.acc.Cloud {
			out = append(out, g.acc.EdgeID)
		}
	}
	return out
}

// revoke drops an edge's grant, whichever connection holds it.
func (h *accessHook) revoke(edgeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, edgeID)
}

// forget drops cl's access unless a later connection with the same client
// ID has been granted its own.
func (h *accessHook) forget(cl *mqtt.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g, ok := h.clients[cl.ID]; ok && g.owner == cl {
		delete(h.clients, cl.ID)
	}
}
