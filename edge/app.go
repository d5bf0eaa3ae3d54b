package edge

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/reader"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/ids"
)

// Defaults of Deps.
const (
	// DefaultDebounce is how long a reader's repeat of the same pass at the
	// same gate is ignored: a pass held in front of a camera or a serial
	// reader in continuous mode counts once.
	DefaultDebounce = 2 * time.Second
	// PruneEvery is how often the App prunes the cache.
	PruneEvery = 24 * time.Hour
	// PruneRetention is how long after a pass ended its visit stays in the
	// cache: a week of history for the status page and for a cloud that
	// is slow to confirm, far beyond any window.
	PruneRetention = 7 * 24 * time.Hour
	// shutdownGrace bounds how long in-flight HTTP requests (a scan is a
	// pulse long) may finish after the App is told to stop.
	shutdownGrace = 5 * time.Second
	// maxScanBody bounds POST /gates/{gate_id}/scan: a token is far shorter.
	maxScanBody = 4 << 10
	// readTimeout bounds reading a request, body included: 8 MiB of frame
	// in 30 s is 2 Mbit/s, slower than any camera on a LAN.
	readTimeout = 30 * time.Second
)

// Syncer is the MQTT edge half (sync/mqttsync): it publishes the outbox
// and applies the cloud's changes to the cache.
type Syncer interface {
	// Run syncs until ctx ends. Its error stops the App.
	Run(ctx context.Context) error
	// Notify says the outbox has a new fact: flush now. It must not block.
	Notify()
}

// Deps are what the App gets from its main rather than its config.
type Deps struct {
	// Logger receives the App's log; nil means slog.Default().
	Logger *slog.Logger
	// OpenPin resolves a GPIO line name for relays and door sensors; nil
	// means relay.Open (the board's pins). SimulatedPins serves
	// --simulate.
	OpenPin func(name string) (gpio.PinIO, error)
	// NewSyncer makes the sync half once the cache and the badge key are
	// open; badge is the public half of the appliance's walk-in badge
	// key, for the sync half's status to carry (the cloud certifies it).
	// Nil runs the gates without one (the cache then never gets fresher).
	NewSyncer func(c *cache.Cache, badge ed25519.PublicKey) (Syncer, error)
	// Online reports whether the cloud takes the site's facts now, for the
	// kiosk's offline indicator; nil: never (the kiosk says offline).
	Online func() bool
	// KioskPrinter is the label printer a kiosk paired without one prints
	// on ("" for none): --simulate's simulated printer.
	KioskPrinter string
	// BrokerState reports the sync half's state for GET /status; it is
	// marshalled as JSON. Nil leaves it out.
	BrokerState func() any
	// KeepCacheSchema opens the cache with cache.Options.KeepSchema: set
	// for a release on trial, so that it never migrates the file the
	// release before it must still read after a rollback.
	KeepCacheSchema bool
	// Connected reports whether the sync half is connected to the broker,
	// for SelfTest; nil: SelfTest does not wait for the broker.
	Connected func() bool
	// Update reports the state of software updates for GET /status and
	// /metrics; nil leaves it out.
	Update func() UpdateStatus
	// Now is the clock of scans, freshness and pruning; nil means time.Now.
	Now func() time.Time
	// Debounce is the window of DefaultDebounce; negative turns it off.
	Debounce time.Duration
}

// App is the site appliance: the cache, one gate per configured gate with
// its relay, door sensor and readers, the sync half and the local HTTP
// server, run together by Run.
type App struct {
	cfg *config.Config
	d   Deps
	log *slog.Logger
	m   *metrics

	ready     chan struct{}
	readyOnce sync.Once
	listening Listening
	handler   atomic.Pointer[http.Handler]
	// kioskDevices are the kiosk's paired devices once Run opened them.
	kioskDevices atomic.Pointer[kiosk.Devices]
	// kioskHandler is what the kiosk's listener serves, once Run opened it.
	kioskHandler atomic.Pointer[http.Handler]
	// running is what Run opened, while it runs, for SelfTest.
	running atomic.Pointer[site]
}

// Listening is where a running App listens.
type Listening struct {
	// HTTP is the local HTTP server's address.
	HTTP net.Addr
	// Kiosk is the kiosk's address; nil when the config has no kiosk.
	Kiosk net.Addr
	// Readers holds each gate's TCP readers' addresses, in config order.
	Readers map[string][]net.Addr
}

// New returns the App for cfg, a configuration from config.Load. Nothing
// is opened until Run. It returns an error naming what cfg lacks.
func New(cfg *config.Config, d Deps) (*App, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("edge: no config")
	case !ids.Valid(ids.Edge, cfg.EdgeID):
		return nil, fmt.Errorf("edge: edge_id %q is not an edge ID", cfg.EdgeID)
	case !cfg.Site.Valid():
		return nil, fmt.Errorf("edge: site %+v is not a valid site", cfg.Site)
	case len(cfg.Gates) == 0:
		return nil, errors.New("edge: no gates")
	case cfg.CachePath == "":
		return nil, errors.New("edge: no cache_path")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.OpenPin == nil {
		d.OpenPin = relay.Open
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Debounce == 0 {
		d.Debounce = DefaultDebounce
	}
	return &App{cfg: cfg, d: d, log: d.Logger, m: newMetrics(), ready: make(chan struct{})}, nil
}

// Ready is closed once Run has opened everything and serves.
func (a *App) Ready() <-chan struct{} { return a.ready }

// Listening returns the addresses listened on; valid once Ready is closed.
func (a *App) Listening() Listening { return a.listening }

// Handler is the local HTTP API, as the App serves it on cfg.Listen; nil
// until Ready is closed.
func (a *App) Handler() http.Handler {
	if h := a.handler.Load(); h != nil {
		return *h
	}
	return nil
}

// site is what Run opens: everything the App closes when it stops.
type site struct {
	cache *cache.Cache
	// badge signs walk-in badges at the desk (the kiosk's store).
	badge   *badgekey.Key
	kiosk   *kioskSite // nil without a kiosk
	notify  func()     // tells the sync half a fact waits
	relays  []*relay.Relay
	gates   map[string]*gate.Gate
	doors   map[string]*relay.DoorSensor
	tcp     map[string][]*reader.TCP
	serials []*reader.Serial
	cameras map[string]bool
	http    net.Listener
	syncer  Syncer
	// deliver scans at a gate and counts the result; readers go through
	// debounced, the HTTP scan endpoint (a person asking) does not.
	deliver, debounced reader.Deliver
}

// Run opens the cache, the relays, the readers and the HTTP listener,
// then serves until ctx ends, and closes everything in order: readers and
// the HTTP server first, so no scan is under way, then relays, then the
// cache. It returns nil when ctx ended, or the first error of opening or
// of a part that failed (a part failing stops the others); a damaged cache
// file, found at the start or later, is an error matching
// cache.ErrDamaged.
func (a *App) Run(ctx context.Context) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	defer a.close(s)
	a.running.Store(s)
	defer a.running.Store(nil)

	h := a.routes(s)
	a.handler.Store(&h)

	g, gctx := errgroup.WithContext(ctx)
	for _, rs := range s.tcp {
		for _, r := range rs {
			g.Go(func() error { return r.Run(gctx) })
		}
	}
	for _, r := range s.serials {
		g.Go(func() error { return r.Run(gctx) })
	}
	for id, d := range s.doors {
		g.Go(func() error { return a.watchDoor(gctx, id, d) })
	}
	if s.syncer != nil {
		g.Go(func() error { return s.syncer.Run(gctx) })
	}
	g.Go(func() error { return a.pruneLoop(gctx, s.cache) })
	if s.kiosk != nil {
		g.Go(func() error { return a.serveKiosk(gctx, s.kiosk) })
	}
	// A cache whose file can no longer be read refuses every call from
	// then on: stop, naming the file, rather than run the gates on it.
	g.Go(func() error {
		select {
		case <-gctx.Done():
			return nil
		case <-s.cache.Damaged():
			return fmt.Errorf("edge: %w", s.cache.DamagedErr())
		}
	})
	// ReadTimeout bounds a frame's upload, which holds one of the few
	// decode slots; no WriteTimeout, as a scan answers after its pulse.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	g.Go(func() error {
		if err := srv.Serve(s.http); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("local http: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			a.log.Warn("local http: requests cut short at shutdown", "error", err.Error())
			_ = srv.Close()
		}
		return nil
	})

	a.log.Info("edge running", "edge_id", a.cfg.EdgeID, "site_id", a.cfg.Site.SiteID, "listen", s.http.Addr().String(),
		"gates", len(s.gates), "visits", s.cache.View().Counts().Visits, "sync", s.syncer != nil)
	a.readyOnce.Do(func() { close(a.ready) })
	err = g.Wait()
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil // a part that returned ctx's error as it stopped
	}
	if err != nil {
		a.log.Error("edge stopping", "error", err.Error())
	}
	return err
}

// open opens every resource, or closes what it opened and fails.
func (a *App) open() (s *site, err error) {
	s = &site{gates: map[string]*gate.Gate{}, doors: map[string]*relay.DoorSensor{}, tcp: map[string][]*reader.TCP{}, cameras: map[string]bool{}}
	defer func() {
		if err != nil {
			a.close(s)
		}
	}()
	if err := os.MkdirAll(filepath.Dir(a.cfg.CachePath), 0o700); err != nil {
		return s, fmt.Errorf("edge: %w", err)
	}
	// The badge key lives beside the cache, on the data partition. A key
	// file that is there and unusable stops the start: badges already
	// printed depend on it (badgekey.FileError says what to do).
	var created bool
	if s.badge, created, err = badgekey.Open(filepath.Join(filepath.Dir(a.cfg.CachePath), badgekey.FileName), nil); err != nil {
		return s, fmt.Errorf("edge: %w", err)
	}
	if created {
		a.log.Info("walk-in badge key made; the cloud certifies it for the site when the edge next connects",
			"path", s.badge.Path(), "key_id", s.badge.ID())
	}
	if s.cache, err = cache.Open(a.cfg.CachePath, cache.Options{EdgeID: a.cfg.EdgeID, KeepSchema: a.d.KeepCacheSchema}); err != nil {
		return s, fmt.Errorf("edge: %w", err)
	}
	// Open decodes every visit: the garbage is as large as the View it
	// built. Give it back now rather than leave the heap at twice the
	// View's size until the scavenger gets to it.
	debug.FreeOSMemory()
	if a.d.NewSyncer != nil {
		if s.syncer, err = a.d.NewSyncer(s.cache, s.badge.Public()); err != nil {
			return s, fmt.Errorf("edge: sync: %w", err)
		}
	}
	s.notify = func() {}
	if s.syncer != nil {
		s.notify = s.syncer.Notify
	}
	st := store{c: s.cache, notify: s.notify}
	passes := new(gate.Passes)
	for _, gc := range a.cfg.Gates {
		pin, err := a.d.OpenPin(gc.Relay.Pin)
		if err != nil {
			return s, fmt.Errorf("edge: gate %s relay: %w", gc.ID, err)
		}
		r, err := relay.New(relay.PinOutput(pin), gc.Relay)
		if err != nil {
			return s, fmt.Errorf("edge: gate %s: %w", gc.ID, err)
		}
		s.relays = append(s.relays, r)
		g, err := gate.New(gate.Config{ID: gc.ID, SiteID: a.cfg.Site.SiteID, FailOpen: gc.WhenStale == config.FailOpen,
			Relay: r, Store: st, Passes: passes, Logger: a.log})
		if err != nil {
			return s, fmt.Errorf("edge: %w", err)
		}
		s.gates[gc.ID] = g
		if gc.Door != nil {
			pin, err := a.d.OpenPin(gc.Door.Pin)
			if err != nil {
				return s, fmt.Errorf("edge: gate %s door: %w", gc.ID, err)
			}
			if s.doors[gc.ID], err = relay.NewDoorSensor(pin, *gc.Door); err != nil {
				return s, fmt.Errorf("edge: gate %s: %w", gc.ID, err)
			}
		}
	}
	s.deliver = func(ctx context.Context, gateID, text string, at time.Time) {
		a.m.observe(s.gates[gateID].Scan(ctx, text, at))
	}
	s.debounced = reader.Debounce(a.d.Debounce, s.deliver)
	// TCP readers listen now, so that a port in use fails the start.
	for _, gc := range a.cfg.Gates {
		for _, rc := range gc.Readers {
			opts := reader.Options{GateID: gc.ID, Logger: a.log, Now: a.d.Now, Deliver: s.debounced}
			switch rc.Kind {
			case config.TCP:
				r, err := reader.ListenTCP(rc.Listen, opts)
				if err != nil {
					return s, fmt.Errorf("edge: gate %s: %w", gc.ID, err)
				}
				s.tcp[gc.ID] = append(s.tcp[gc.ID], r)
			case config.Serial:
				r, err := reader.NewSerial(rc.Device, rc.Baud, opts)
				if err != nil {
					return s, fmt.Errorf("edge: gate %s: %w", gc.ID, err)
				}
				s.serials = append(s.serials, r)
			case config.Camera:
				s.cameras[gc.ID] = true
			default:
				return s, fmt.Errorf("edge: gate %s: reader kind %q", gc.ID, rc.Kind)
			}
		}
	}
	if s.http, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return s, fmt.Errorf("edge: local http: %w", err)
	}
	a.listening = Listening{HTTP: s.http.Addr(), Readers: map[string][]net.Addr{}}
	if a.cfg.Kiosk != nil {
		if err := a.openKiosk(s); err != nil {
			return s, err
		}
		a.listening.Kiosk = s.kiosk.ln.Addr()
	}
	for id, rs := range s.tcp {
		for _, r := range rs {
			a.listening.Readers[id] = append(a.listening.Readers[id], r.Addr())
		}
	}
	return s, nil
}

// close releases what open opened, in reverse. The listeners of readers
// that ran are closed already; closing them again does nothing.
func (a *App) close(s *site) {
	if s.http != nil {
		_ = s.http.Close()
	}
	if s.kiosk != nil {
		_ = s.kiosk.ln.Close()
	}
	for _, rs := range s.tcp {
		for _, r := range rs {
			_ = r.Close()
		}
	}
	for _, r := range s.relays {
		if err := r.Close(); err != nil {
			a.log.Error("relay not closed", "error", err.Error())
		}
	}
	if s.cache != nil {
		if err := s.cache.Close(); err != nil {
			a.log.Error("cache not closed", "error", err.Error())
		}
	}
}
