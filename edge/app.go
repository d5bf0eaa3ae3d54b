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
	// means AppliancePins (the board's pins, a first configuration's
	// placeholders simulated). SimulatedPins serves --simulate.
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
	// CacheOpened is called once the cache is open and the garbage of
	// opening it given back to the OS, before the sync half is made: the
	// daemon sets its steady GOGC there. Nil: nothing is called.
	CacheOpened func()
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
	// Sync reports the sync half's connection and counters for GET
	// /metrics; nil leaves them out.
	Sync func() SyncMetrics
	// Version is the release this program is ("1.4.2"), for GET /metrics'
	// build-info series; "" for none.
	Version string
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
	// readers holds each gate's TCP readers' addresses, as the hardware
	// driven now has them (Listening).
	readers atomic.Pointer[map[string][]net.Addr]
	// hwState is what hardware the App drives, and why not the cloud's.
	hwState atomic.Pointer[hwState]
}

// Listening is where a running App listens.
type Listening struct {
	// HTTP is the local HTTP server's address.
	HTTP net.Addr
	// Kiosk is the kiosk's address; nil when the config has no kiosk.
	Kiosk net.Addr
	// Readers holds each gate's TCP readers' addresses, in the order the
	// hardware driven now lists them: it changes with the hardware.
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
	case cfg.CachePath == "":
		return nil, errors.New("edge: no cache_path")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.OpenPin == nil {
		d.OpenPin = AppliancePins(d.Logger)
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
func (a *App) Listening() Listening {
	l := a.listening
	if r := a.readers.Load(); r != nil {
		l.Readers = *r
	}
	return l
}

// Handler is the local HTTP API, as the App serves it on cfg.Listen; nil
// until Ready is closed.
func (a *App) Handler() http.Handler {
	if h := a.handler.Load(); h != nil {
		return *h
	}
	return nil
}

// site is what Run opens: everything the App closes when it stops. The
// cache, the badge key, the sync half, the HTTP listener and the kiosk
// live as long as the process; the hardware (hw and readers, hardware.go)
// changes with the document it is opened from.
type site struct {
	cache *cache.Cache
	// badge signs walk-in badges at the desk (the kiosk's store).
	badge  *badgekey.Key
	kiosk  *kioskSite // nil without a kiosk
	notify func()     // tells the sync half a fact waits
	http   net.Listener
	syncer Syncer
	st     store        // the gates' store
	passes *gate.Passes // shared by every gate of every hardware
	// ctx is Run's: scans are decided under it, whichever reader read
	// them, so a reader stopped by a hardware change does not cut short
	// the scans it read.
	ctx context.Context
	// deliver scans at a gate and counts the result; readers go through
	// debounced, the HTTP scan endpoint (a person asking) does not.
	deliver, debounced reader.Deliver

	// hwMu is held for reading by every scan and for writing by a
	// hardware change, which so never runs beside a scan.
	hwMu    sync.RWMutex
	hw      *hwSet                    // the gates driven now
	readers map[string]*runningReader // by readerKey, guarded by hwMu
	// readerWG owns every reader's Run; failed receives the error of a
	// reader that failed on its own.
	readerWG sync.WaitGroup
	failed   chan error
}

// gate returns the gate driven now with this ID; the caller holds hwMu.
func (s *site) gate(id string) (*gate.Gate, bool) {
	g, ok := s.hw.gates[id]
	return g, ok
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
	defer s.readerWG.Wait() // before the cache closes: their last scans record
	a.running.Store(s)
	defer a.running.Store(nil)

	h := a.routes(s)
	a.handler.Store(&h)

	g, gctx := errgroup.WithContext(ctx)
	s.ctx = gctx
	g.Go(func() error { return a.runHardware(gctx, s) })
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

	s.hwMu.RLock()
	gates, source := len(s.hw.gates), s.hw.source
	s.hwMu.RUnlock()
	a.log.Info("edge running", "edge_id", a.cfg.EdgeID, "site_id", a.cfg.Site.SiteID, "listen", s.http.Addr().String(),
		"gates", gates, "hardware", source, "visits", s.cache.View().Counts().Visits, "sync", s.syncer != nil)
	if gates == 0 {
		a.log.Warn("no gates: the appliance drives none until the cloud sends its hardware (PATCH /v1/edges/{edge_id})")
	}
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
	s = &site{ctx: context.Background(), passes: new(gate.Passes), failed: make(chan error, 1)}
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
	if a.d.CacheOpened != nil {
		a.d.CacheOpened()
	}
	if a.d.NewSyncer != nil {
		if s.syncer, err = a.d.NewSyncer(s.cache, s.badge.Public()); err != nil {
			return s, fmt.Errorf("edge: sync: %w", err)
		}
	}
	s.notify = func() {}
	if s.syncer != nil {
		s.notify = s.syncer.Notify
	}
	s.st = store{c: s.cache, notify: s.notify}
	s.deliver = func(_ context.Context, gateID, text string, at time.Time) {
		s.hwMu.RLock()
		defer s.hwMu.RUnlock()
		g, ok := s.gate(gateID)
		if !ok { // its gate went with a hardware change while the scan waited
			a.log.Warn("scan dropped: the gate is no longer driven here", "gate_id", gateID)
			return
		}
		a.m.observe(g.Scan(s.ctx, text, at))
	}
	s.debounced = reader.Debounce(a.d.Debounce, s.deliver)
	if err := a.openFirstHardware(s); err != nil {
		return s, err
	}
	if s.http, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return s, fmt.Errorf("edge: local http: %w", err)
	}
	a.listening = Listening{HTTP: s.http.Addr()}
	if a.cfg.Kiosk != nil {
		if err := a.openKiosk(s); err != nil {
			return s, err
		}
		a.listening.Kiosk = s.kiosk.ln.Addr()
		a.applyPrinting(s, s.hw.doc)
	}
	a.publishReaders(s)
	return s, nil
}

// openFirstHardware opens the hardware wanted at the start: the cloud's
// document when the cache holds one, else the file's. A cloud document
// that does not open gives way to the file's, with the error in the
// status; the file's failing stops the start, as it always has.
func (a *App) openFirstHardware(s *site) error {
	doc, source := a.wanted(s)
	if source == SourceConfig {
		if err := a.openHardware(s, doc, source); err != nil {
			return fmt.Errorf("edge: %w", err)
		}
		a.setHardwareState(&hwState{source: source})
		return nil
	}
	err := a.checkHardware(doc)
	if err == nil {
		if err = a.openHardware(s, doc, source); err == nil {
			a.setHardwareState(&hwState{source: source})
			return nil
		}
	}
	a.log.Error("hardware from the cloud did not open; the configuration file's gates run instead", "error", err.Error())
	tried := doc.Clone()
	file := a.cfg.Hardware()
	if ferr := a.openHardware(s, file, SourceConfig); ferr != nil {
		return fmt.Errorf("edge: %w", ferr)
	}
	a.setHardwareState(&hwState{source: SourceConfig, err: err, at: a.d.Now(), tried: &tried})
	return nil
}

// close releases what open opened, in reverse. The readers that ran have
// stopped already; stopping them again does nothing.
func (a *App) close(s *site) {
	if s.http != nil {
		_ = s.http.Close()
	}
	if s.kiosk != nil {
		_ = s.kiosk.ln.Close()
	}
	for _, r := range s.readers {
		r.stop() // a reader that never ran closes its listener
	}
	a.closeSet(s.hw)
	if s.cache != nil {
		if err := s.cache.Close(); err != nil {
			a.log.Error("cache not closed", "error", err.Error())
		}
	}
}
