package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/enrol"
	"github.com/svc-vms/svc/edge/update"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/kiosk/printer"
	"github.com/svc-vms/svc/shared/gcpercent"
	"github.com/svc-vms/svc/shared/logging"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// software is what the edge reports to the cloud in its status: the
// program and its release version ("svc-edge 1.4.2"), which the fleet
// API shows.
func software() string { return "svc-edge " + version }

// runDaemon is `svc-edge run`: load the config, wire the App and run it
// until ctx ends (SIGINT or SIGTERM).
func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "usage: svc-edge run [--config FILE] [--simulate] [--cloud URL [--data DIR] [--ca FILE]]\n"+
		"Runs the appliance until SIGINT or SIGTERM. An appliance without its config file is not enrolled: with --cloud it\n"+
		"enrols first (as svc-edge enrol does), without it the command says so.")
	path := fs.String("config", env("SVC_EDGE_CONFIG", defaultConfig), "the config file (env SVC_EDGE_CONFIG)")
	simulate := fs.Bool("simulate", envBool("SVC_EDGE_SIMULATE"), "simulated GPIO pins that log every level, for a machine without GPIO (env SVC_EDGE_SIMULATE)")
	var ef enrolFlags
	ef.register(fs) // --cloud is also where updates come from
	var uf updateFlags
	fs.StringVar(&uf.identity, "identity", env("SVC_EDGE_IDENTITY", ""), "the appliance's identity key file, which signs its requests to the cloud; empty: the one enrolment made in --data (env SVC_EDGE_IDENTITY)")
	every, err := time.ParseDuration(env("SVC_EDGE_UPDATE_EVERY", update.DefaultEvery.String()))
	if err != nil {
		return usageError{fmt.Sprintf("run: SVC_EDGE_UPDATE_EVERY: %v", err)}
	}
	fs.DurationVar(&uf.every, "update-every", every, "how often to ask the cloud for a release (env SVC_EDGE_UPDATE_EVERY)")
	var lc logging.Config
	lc.Register(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	faultAtStart()
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	if err := lc.Validate(); err != nil {
		return usageError{"run: " + err.Error()}
	}
	log := lc.New(stderr)
	if _, err := os.Stat(*path); errors.Is(err, os.ErrNotExist) {
		if ef.cloud == "" {
			return fmt.Errorf("run: %s does not exist: the appliance is not enrolled; run svc-edge enrol --cloud URL (or svc-edge run --cloud URL) first", *path)
		}
		if err := enrolAppliance(ctx, ef, *path, log, stdout); err != nil {
			return err
		}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	gcpercent.Default(os.Getenv, openGCPercent)
	deps := edge.Deps{Logger: log, KeepCacheSchema: update.OnTrial()}
	deps.CacheOpened = func() { gcpercent.Default(os.Getenv, defaultGCPercent) }
	if *simulate {
		deps.OpenPin = edge.SimulatedPins(log)
	}

	// The MQTT edge half (sync/mqttsync), made by the App once the cache
	// is open: the cache is its store. Its statuses say why the App does
	// not drive the hardware the cloud sent, when it does not.
	var half atomic.Pointer[mqttsync.Edge]
	var app *edge.App
	deps.NewSyncer = func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
		e, err := mqttsync.NewEdge(mqttsync.EdgeConfig{
			BrokerURL: cfg.Broker.URL, Username: cfg.Broker.Username, Password: cfg.Broker.Password, TLS: cfg.Broker.TLS(),
			Site: cfg.Site, EdgeID: cfg.EdgeID, Store: c, Logger: log, Software: software(), BadgeKey: badge,
			Health: edge.Health(c, cfg.DataDir), HardwareError: app.HardwareError,
		})
		if err != nil {
			return nil, err
		}
		half.Store(e)
		return e, nil
	}
	deps.BrokerState = func() any {
		if e := half.Load(); e != nil {
			return e.State()
		}
		return nil
	}
	deps.Connected = func() bool {
		e := half.Load()
		return e != nil && e.State().Connected
	}
	deps.Sync = func() edge.SyncMetrics {
		e := half.Load()
		if e == nil {
			return edge.SyncMetrics{}
		}
		st := e.State()
		c := st.Counters
		return edge.SyncMetrics{Connected: st.Connected, Connects: c.Connects, ConnectErrors: c.ConnectErrors,
			ChangesApplied: c.ChangesApplied, ResyncRequests: c.ResyncRequests, Snapshots: c.Snapshots,
			FactsPublished: c.FactsPublished, FactsAcked: c.FactsAcked, Dropped: c.Dropped, InFlight: st.InFlight}
	}
	deps.Version = version
	// Updates come from the cloud the appliance enrolled with, signed by
	// the identity key enrolment made (unless --identity names another).
	uf.cloud = ef.cloud
	if uf.identity == "" {
		if p := filepath.Join(cfg.DataDir, enrol.KeyFileName); fileExists(p) {
			uf.identity = p
		}
	}
	up, err := newUpdates(uf, log)
	if err != nil {
		return err
	}
	deps.Update = up.status
	deps.Online = func() bool {
		e := half.Load()
		return e != nil && e.State().TakingFacts(time.Now(), edge.OnlineWait)
	}
	if *simulate && cfg.Kiosk != nil {
		// The demo's label printer: a simulated Brother QL that keeps what
		// it prints as PNGs beside the cache.
		sim, err := simulatedPrinter(ctx, filepath.Join(filepath.Dir(cfg.CachePath), "printed"), cfg.Kiosk.Label, log)
		if err != nil {
			return err
		}
		deps.KioskPrinter = sim
	}

	if app, err = edge.New(cfg, deps); err != nil {
		return err
	}
	if *simulate && cfg.Kiosk != nil {
		go announceKiosk(ctx, app, stderr)
	}
	// The App and the Updater stop together; the Updater stops them both
	// when it requested a trial, for the supervisor to start it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var trial atomic.Pointer[update.Trial]
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if update.OnTrial() {
			trialCheck(ctx, app, trialCheckTimeout, log)
		}
		if up.u == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-app.Ready():
		}
		up.u.Restart = func(t update.Trial) { trial.Store(&t); cancel() }
		_ = up.u.Run(ctx)
	}()
	err = app.Run(ctx)
	cancel()
	wg.Wait()
	if errors.Is(err, cache.ErrDamaged) {
		return fmt.Errorf("%w\n%s", err, damagedHelp(*path))
	} else if err != nil {
		return err
	}
	if t := trial.Load(); t != nil {
		return exitError{code: exitTrial, msg: fmt.Sprintf("stopped for the supervisor to start release %s on trial (slot %s)", t.Slot.Version, t.Slot.Name)}
	}
	return nil
}

// trialCheckTimeout bounds a trial's health check, within the supervisor's
// update.DefaultTrialTimeout: mostly the wait for the broker.
const trialCheckTimeout = 2 * time.Minute

// simulatedPrinter starts a simulated label printer on 127.0.0.1:9100, or
// on a free port when that is taken, loaded with label's labels, and
// returns its address.
func simulatedPrinter(ctx context.Context, dir, label string, log *slog.Logger) (string, error) {
	sim, err := printer.ListenSimulator("127.0.0.1:9100", dir, log)
	if err != nil {
		if sim, err = printer.ListenSimulator("127.0.0.1:0", dir, log); err != nil {
			return "", fmt.Errorf("simulated printer: %w", err)
		}
	}
	if l, ok := badge.LabelByName(label); ok {
		sim.Load(printer.MediaOf(l))
	}
	go func() {
		if err := sim.Run(ctx); err != nil {
			log.Error("simulated printer stopped", "error", err.Error())
		}
	}()
	log.Info("simulated label printer", "addr", sim.Addr(), "printed", dir)
	return sim.Addr(), nil
}

// announceKiosk prints the demo kiosk's address and two pairing codes once
// the App serves: one for a visitor tablet, one for the reception desk.
func announceKiosk(ctx context.Context, app *edge.App, w io.Writer) {
	select {
	case <-ctx.Done():
		return
	case <-app.Ready():
	}
	visitor, err := app.NewPairingCode("Demo visitor tablet", kiosk.ModeVisitor)
	if err != nil {
		return
	}
	desk, err := app.NewPairingCode("Demo reception desk", kiosk.ModeReception)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "\nreception kiosk: http://%s/\n  pairing code for a visitor tablet:  %s\n  pairing code for the reception desk: %s\n"+
		"  (each works once, for %s; more with: svc-edge kiosk pair --addr %s [--mode reception])\n\n",
		app.Listening().Kiosk, dash(visitor.Code), dash(desk.Code), kiosk.PairingTTL, app.Listening().HTTP)
}

// dash shows a 6-digit pairing code as 123-456.
func dash(code string) string {
	if len(code) != 6 {
		return code
	}
	return code[:3] + "-" + code[3:]
}

// defaultGCPercent is the daemon's GOGC once the cache is open, unless
// the environment sets one. Its heap is mostly the cache's View,
// long-lived (about 18 MB for 100,000 visits), and the garbage is small
// and steady (some 40 KB a scan through the HTTP API, 18 MB a batch of
// 500 changes). Go lets the heap reach (1+GOGC/100) times the live heap
// before collecting: at 50 svc-edge held 44-45 MiB after 1,000 scans, at
// 10 38 (docs/performance.md, "Edge memory, fifth pass"). A collection
// every tenth of the live heap costs little since the View's leaves hold
// no pointers: the collector marks them and does not read them (ten
// forced collections of that View take 50-150 ms, where they took
// 430-510 ms with pointers in its leaves, when 20 was measured slower
// and not taken). A GOMEMLIMIT was not chosen: one fixed does not scale
// with the site, and at 24 MiB it made the collector run continuously
// (scans through the API at a p50 of 14-16 ms).
const defaultGCPercent = 10

// openGCPercent is the daemon's GOGC until the cache is open: opening
// decodes every visit (about 200 MB of garbage for 100,000) while the
// live heap grows from nothing, which a GOGC of 10 would collect a
// hundred times over.
const openGCPercent = 50

// envBool reads a boolean variable; unset, empty or unparsable is false.
func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
