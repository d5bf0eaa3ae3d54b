package sitetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/mqttsync/mqtttest"
	"github.com/svc-vms/svc/sync/protocol"
)

// EdgeOptions adjust an edge's sync half; a zero field takes the
// harness's test default.
type EdgeOptions struct {
	// Window bounds the facts in flight (mqttsync.EdgeConfig.Window);
	// default 256.
	Window int
	// ResyncEvery is how often the edge asks for what follows its
	// sequence with nothing else happening; default 1s.
	ResyncEvery time.Duration
	// AckTimeout is how long a published fact waits for its
	// acknowledgement before it is published again; default 1s.
	AckTimeout time.Duration
	// FailOpen makes the gates decide from a stale cache (when_stale
	// fail_open), for tests that move the edge's clock days ahead.
	FailOpen bool
	// Other enrols the edge at the World's Other site, with its one gate
	// (OtherGate, both ways), instead of at Site; read by NewEdge only.
	Other bool
	// BadgeKeyByStatus leaves the edge's walk-in badge key for its first
	// status to carry to the cloud, as in production; by default NewEdge
	// makes the key file and certifies the key at enrolment, so that the
	// certification does not move the feed's head under a test that
	// counts changes. Read by NewEdge only.
	BadgeKeyByStatus bool
	// Kiosk serves the reception kiosk on a free port (English and
	// French), its badges printed on KioskPrinter when that is set; read
	// by NewEdge (Kiosk) and Start (KioskPrinter).
	Kiosk        bool
	KioskPrinter string
	// OnlineWait is how long facts may wait unacknowledged before the
	// kiosk says the site is offline; default 2s (edge.OnlineWait in
	// production).
	OnlineWait time.Duration
}

// syncConfig is an edge half's configuration for cfg with the test
// timings: an unacknowledged fact is published again after a second,
// an unanswered resync asked again after a second, reconnections within
// 200 ms.
func syncConfig(cfg *config.Config, store mqttsync.EdgeStore, badge ed25519.PublicKey, o EdgeOptions, log *slog.Logger) mqttsync.EdgeConfig {
	ec := mqttsync.EdgeConfig{
		BrokerURL: cfg.Broker.URL, Username: cfg.Broker.Username, Password: cfg.Broker.Password, TLS: cfg.Broker.TLS(),
		Site: cfg.Site, EdgeID: cfg.EdgeID, Store: store, Logger: log, Software: "sitetest", BadgeKey: badge,
		ResyncEvery: time.Second, ResyncTimeout: time.Second, AckTimeout: time.Second,
		StatusEvery: 2 * time.Second, SyncedEvery: 100 * time.Millisecond,
		KeepAlive: 10 * time.Second, ConnectTimeout: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Window: o.Window,
	}
	if o.ResyncEvery > 0 {
		ec.ResyncEvery = o.ResyncEvery
	}
	if o.AckTimeout > 0 {
		ec.AckTimeout = o.AckTimeout
	}
	return ec
}

// Clock is an in-process edge's clock (edge.Deps.Now): the system's until
// Set pins it.
type Clock struct{ fixed atomic.Pointer[time.Time] }

// Now is the pinned time, or the system's.
func (c *Clock) Now() time.Time {
	if p := c.fixed.Load(); p != nil {
		return *p
	}
	return time.Now()
}

// Set pins the clock at t.
func (c *Clock) Set(t time.Time) { c.fixed.Store(&t) }

// Real unpins the clock.
func (c *Clock) Real() { c.fixed.Store(nil) }

// Edge is one of Site's appliances: enrolled in the cloud (its broker
// credentials made by cloud.Service.CreateEdge), with a configuration
// file in Dir and its cache beside it. It runs in the test process
// (Start) or as a child process (StartChild), one at a time, on the same
// file; it reaches the broker through Proxy.
type Edge struct {
	ID         string
	Site       protocol.Site // the site it is enrolled at: the World's Site, or Other
	Dir        string
	ConfigPath string
	CachePath  string
	Proxy      *mqtttest.Proxy
	// Clock is the in-process App's clock: gates decide and stamp facts
	// with it. A child edge uses the system's.
	Clock *Clock

	w        *World
	t        testing.TB
	opts     EdgeOptions
	username string // its broker credentials
	password string

	mu    sync.Mutex
	run   *edgeRun
	child *Child
}

// edgeRun is an App running in the test process.
type edgeRun struct {
	app   *edge.App
	cache atomic.Pointer[cache.Cache]
	half  atomic.Pointer[mqttsync.Edge]
	addr  string
	stop  func()
	done  chan error
}

// NewEdge enrols an edge at Site and writes its configuration: a TCP
// reader at each gate, simulated relays with a 1 ms pulse, gates that
// fail secure (unless opts.FailOpen), the broker through a new Proxy. It
// does not start it.
func (w *World) NewEdge(t testing.TB, opts EdgeOptions) *Edge {
	t.Helper()
	site := w.Site
	if opts.Other {
		site = w.Other
	}
	ce, secret, err := w.Svc().CreateEdge(context.Background(), w.Tenant, site.SiteID, "Sitetest edge")
	must(t, err)
	dir := t.TempDir()
	e := &Edge{ID: ce.ID, Site: site, Dir: dir, ConfigPath: filepath.Join(dir, "config.json"), CachePath: filepath.Join(dir, "state", "cache.db"),
		Proxy: mqtttest.NewProxy(t, w.brokerURL), Clock: &Clock{}, w: w, t: t, opts: opts, username: ce.Username, password: secret}
	ports, err := freeport.Pick(3)
	must(t, err)
	whenStale := "fail_secure"
	if opts.FailOpen {
		whenStale = "fail_open"
	}
	gate := func(id string, port int, pin string) map[string]any {
		return map[string]any{
			"gate_id":    id,
			"readers":    []any{map[string]any{"kind": "tcp", "listen": fmt.Sprintf("127.0.0.1:%d", port)}},
			"relay":      map[string]any{"pin": pin, "pulse": "1ms"},
			"when_stale": whenStale,
		}
	}
	gates := []any{gate(w.Entry, ports[1], "SIM17"), gate(w.Exit, ports[2], "SIM22")}
	if opts.Other {
		gates = []any{gate(w.OtherGate, ports[1], "SIM17")}
	}
	file := map[string]any{
		"site":       map[string]any{"mode": site.Mode, "org_id": site.OrgID, "site_id": site.SiteID},
		"edge_id":    ce.ID,
		"broker":     map[string]any{"url": e.Proxy.URL(), "username": ce.Username, "password": secret},
		"data_dir":   dir,
		"cache_path": e.CachePath,
		"listen":     fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"gates":      gates,
	}
	if opts.Kiosk {
		file["kiosk"] = map[string]any{"listen": freeport.Addr(t), "languages": []string{"en", "fr"}}
	}
	raw, err := json.MarshalIndent(file, "", "  ")
	must(t, err)
	must(t, os.WriteFile(e.ConfigPath, raw, 0o600))
	if !opts.BadgeKeyByStatus {
		must(t, os.MkdirAll(filepath.Dir(e.CachePath), 0o700))
		k, _, err := badgekey.Open(filepath.Join(filepath.Dir(e.CachePath), badgekey.FileName), nil)
		must(t, err)
		must(t, w.Svc().Store().CertifyBadgeKey(context.Background(), w.Tenant, site.SiteID, ce.ID, k.Public(), time.Now()))
	}
	if w.Opts.Broker == Mosquitto {
		// Mosquitto keeps sessions and retained messages on disk.
		t.Cleanup(func() { e.endSession(t, true) })
	}
	t.Cleanup(e.stopAll)
	w.mu.Lock()
	w.edges = append(w.edges, e)
	w.mu.Unlock()
	return e
}

// DropSession makes the broker forget the stopped edge's persistent
// session, and with it the feed's batches queued for the edge while it was
// away, as a restarted embedded broker or an expired session would: the
// edge must then ask for what it missed.
func (e *Edge) DropSession(t testing.TB) {
	t.Helper()
	e.mustBeStopped(t)
	if err := e.endSession(t, false); err != nil {
		t.Fatal(err)
	}
}

// endSession connects as the edge with a clean session, which ends its
// persistent one, and clears its retained status when asked.
func (e *Edge) endSession(t testing.TB, clearStatus bool) error {
	opts := paho.NewClientOptions().AddBroker(e.w.brokerURL).SetClientID(e.ID).SetUsername(e.username).SetPassword(e.password).
		SetCleanSession(true).SetProtocolVersion(4).SetAutoReconnect(false)
	c := paho.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		return fmt.Errorf("end the session of %s: %v", e.ID, tok.Error())
	}
	if clearStatus {
		c.Publish(e.Site.Status(e.ID), 1, true, []byte{}).WaitTimeout(5 * time.Second)
	}
	c.Disconnect(100)
	return nil
}

// SetOptions changes the sync half's options from the edge's next start.
func (e *Edge) SetOptions(o EdgeOptions) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opts = o
}

// Start runs the edge's App in the test process, from its configuration
// file, and waits until it serves. The App's sync half is the real
// mqttsync edge half over its cache.
func (e *Edge) Start() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != nil || e.child != nil {
		e.t.Fatal("sitetest: the edge is running already")
	}
	cfg, err := config.Load(e.ConfigPath)
	must(e.t, err)
	log := Logger(e.t, "edge")
	opts := e.opts
	r := &edgeRun{done: make(chan error, 1)}
	deps := edge.Deps{
		Logger:  log,
		OpenPin: edge.SimulatedPins(slog.New(slog.DiscardHandler)),
		NewSyncer: func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
			half, err := mqttsync.NewEdge(syncConfig(cfg, c, badge, opts, log))
			if err != nil {
				return nil, err
			}
			r.cache.Store(c)
			r.half.Store(half)
			return half, nil
		},
		BrokerState: func() any { return r.half.Load().State() },
		Now:         e.Clock.Now,
		Online: func() bool {
			wait := opts.OnlineWait
			if wait == 0 {
				wait = 2 * time.Second
			}
			h := r.half.Load()
			return h != nil && h.State().TakingFacts(time.Now(), wait)
		},
		KioskPrinter: opts.KioskPrinter,
	}
	app, err := edge.New(cfg, deps)
	must(e.t, err)
	r.app = app
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- app.Run(ctx) }()
	select {
	case <-app.Ready():
	case err := <-r.done:
		cancel()
		e.t.Fatalf("edge %s did not start: %v", e.ID, err)
	case <-time.After(wait):
		cancel()
		e.t.Fatalf("edge %s did not start within %v", e.ID, wait)
	}
	r.addr = app.Listening().HTTP.String()
	r.stop = func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				e.t.Errorf("edge %s: %v", e.ID, err)
			}
		case <-time.After(wait):
			e.t.Errorf("edge %s did not stop within %v", e.ID, wait)
		}
	}
	e.run = r
}

// Stop stops the in-process App: readers and HTTP first, then the sync
// half (which says offline), then the cache.
func (e *Edge) Stop() {
	e.mu.Lock()
	r := e.run
	e.run = nil
	e.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

func (e *Edge) stopAll() {
	e.Stop()
	e.mu.Lock()
	c := e.child
	e.mu.Unlock()
	if c != nil {
		c.Kill()
	}
}

// App is the in-process App.
func (e *Edge) App() *edge.App { return e.running().app }

// KioskURL is the running kiosk's base URL, http://127.0.0.1:PORT.
func (e *Edge) KioskURL() string {
	e.t.Helper()
	a := e.running().app.Listening().Kiosk
	if a == nil {
		e.t.Fatal("sitetest: the edge serves no kiosk (EdgeOptions.Kiosk)")
	}
	return "http://" + a.String()
}

func (e *Edge) running() *edgeRun {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run == nil {
		e.t.Fatal("sitetest: the edge is not running in the test process")
	}
	return e.run
}

// BadgeKey is the edge's walk-in badge key, as NewEdge or the App's
// first start made it beside the cache: what the kiosk signs badges with.
func (e *Edge) BadgeKey(t testing.TB) *badgekey.Key {
	t.Helper()
	k, created, err := badgekey.Open(filepath.Join(filepath.Dir(e.CachePath), badgekey.FileName), nil)
	must(t, err)
	if created {
		t.Fatalf("sitetest: edge %s has no badge key yet: start it first", e.ID)
	}
	return k
}

// View is the running edge's cache as the gates see it now.
func (e *Edge) View() *cache.View { return e.running().cache.Load().View() }

// Cache is the running edge's cache.
func (e *Edge) Cache() *cache.Cache { return e.running().cache.Load() }

// Half is the running edge's MQTT half.
func (e *Edge) Half() *mqttsync.Edge { return e.running().half.Load() }

// Outbox is how many facts wait for the cloud's acknowledgement.
func (e *Edge) Outbox() int {
	e.t.Helper()
	n, _, err := e.Cache().OutboxStats()
	must(e.t, err)
	return n
}

// Scan posts a token to a gate's scan endpoint, as svc-edge scan does, and
// returns the decision.
func (e *Edge) Scan(t testing.TB, gateID, token string) edge.ScanResponse {
	t.Helper()
	return scan(t, e.running().addr, gateID, token)
}

// ScanAll scans every token at the gate, a few at once, as visitors at
// several readers would, and returns the decisions in the tokens' order.
func (e *Edge) ScanAll(t testing.TB, gateID string, tokens []string) []edge.ScanResponse {
	t.Helper()
	return scanAll(t, e.running().addr, gateID, tokens)
}

// Status is GET /status.
func (e *Edge) Status(t testing.TB) edge.StatusResponse {
	t.Helper()
	return status(t, e.running().addr)
}

// ReaderScan sends a line to the gate's TCP reader, as an IP QR reader
// does. It returns once the line is written; the gate decides after.
func (e *Edge) ReaderScan(t testing.TB, gateID, text string) {
	t.Helper()
	addrs := e.running().app.Listening().Readers[gateID]
	if len(addrs) == 0 {
		t.Fatalf("gate %s has no TCP reader", gateID)
	}
	c, err := net.DialTimeout("tcp", addrs[0].String(), 5*time.Second)
	must(t, err)
	defer c.Close()
	_, err = io.WriteString(c, text+"\n")
	must(t, err)
}

// SaveCache copies the cache file of the stopped edge aside and returns
// the copy's path.
func (e *Edge) SaveCache(t testing.TB) string {
	t.Helper()
	e.mustBeStopped(t)
	dst := filepath.Join(t.TempDir(), "cache-copy.db")
	copyFile(t, e.CachePath, dst)
	return dst
}

// RestoreCache puts a copy made by SaveCache back in place of the stopped
// edge's cache file, as restoring an old backup would.
func (e *Edge) RestoreCache(t testing.TB, src string) {
	t.Helper()
	e.mustBeStopped(t)
	copyFile(t, src, e.CachePath)
}

// OpenCache opens the stopped edge's cache file, closed when t ends.
func (e *Edge) OpenCache(t testing.TB) *cache.Cache {
	t.Helper()
	e.mustBeStopped(t)
	c, err := cache.Open(e.CachePath, cache.Options{EdgeID: e.ID})
	must(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (e *Edge) mustBeStopped(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != nil || e.child != nil {
		t.Fatal("sitetest: stop the edge first")
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	must(t, err)
	must(t, os.WriteFile(dst, b, 0o600))
}

// httpClient is the clients' of the edges' local HTTP: a scan answers
// within its pulse.
var httpClient = &http.Client{Timeout: wait}

func scan(t testing.TB, addr, gateID, token string) edge.ScanResponse {
	t.Helper()
	res, err := postScan(addr, gateID, token)
	must(t, err)
	return res
}

// scanAll scans every token at the gate, four at a time, and returns the
// decisions in the tokens' order.
func scanAll(t testing.TB, addr, gateID string, tokens []string) []edge.ScanResponse {
	t.Helper()
	out := make([]edge.ScanResponse, len(tokens))
	errs := make([]error, len(tokens))
	parallel(len(tokens), func(i int) { out[i], errs[i] = postScan(addr, gateID, tokens[i]) })
	must(t, errors.Join(errs...))
	return out
}

func postScan(addr, gateID, token string) (edge.ScanResponse, error) {
	var out edge.ScanResponse
	resp, err := httpClient.Post("http://"+addr+"/gates/"+gateID+"/scan", "text/plain", bytes.NewReader([]byte(token)))
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(body, &out); err != nil || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError) {
		return out, fmt.Errorf("scan at %s: %s %s", gateID, resp.Status, body)
	}
	return out, nil
}

func status(t testing.TB, addr string) edge.StatusResponse {
	t.Helper()
	resp, err := httpClient.Get("http://" + addr + "/status")
	must(t, err)
	defer resp.Body.Close()
	var out edge.StatusResponse
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status: %s %s", resp.Status, body)
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}
