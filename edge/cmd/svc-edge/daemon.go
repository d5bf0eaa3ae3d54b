package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// software is what the edge reports to the cloud in its status.
const software = "svc-edge"

// runDaemon is `svc-edge run`: load the config, wire the App and run it
// until ctx ends (SIGINT or SIGTERM).
func runDaemon(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("run", "usage: svc-edge run [--config FILE] [--simulate]\nRuns the appliance until SIGINT or SIGTERM.")
	path := fs.String("config", env("SVC_EDGE_CONFIG", defaultConfig), "the config file (env SVC_EDGE_CONFIG)")
	simulate := fs.Bool("simulate", envBool("SVC_EDGE_SIMULATE"), "simulated GPIO pins that log every level, for a machine without GPIO (env SVC_EDGE_SIMULATE)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	setGC(os.Getenv)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	deps := edge.Deps{Logger: log}
	if *simulate {
		deps.OpenPin = edge.SimulatedPins(log)
	}

	// The MQTT edge half (sync/mqttsync), made by the App once the cache
	// is open: the cache is its store.
	var half atomic.Pointer[mqttsync.Edge]
	deps.NewSyncer = func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
		e, err := mqttsync.NewEdge(mqttsync.EdgeConfig{
			BrokerURL: cfg.Broker.URL, Username: cfg.Broker.Username, Password: cfg.Broker.Password, TLS: cfg.Broker.TLS(),
			Site: cfg.Site, EdgeID: cfg.EdgeID, Store: c, Logger: log, Software: software, BadgeKey: badge,
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

	app, err := edge.New(cfg, deps)
	if err != nil {
		return err
	}
	if err := app.Run(ctx); errors.Is(err, cache.ErrDamaged) {
		return fmt.Errorf("%w\n%s", err, damagedHelp(*path))
	} else if err != nil {
		return err
	}
	return nil
}

// defaultGCPercent is the daemon's GOGC unless the environment sets one.
// Its heap is mostly the cache's View, long-lived (about 21 MB for
// 100,000 visits), and the garbage is small and steady (about 130 KB a
// scan, 18 MB a batch of 500 changes). Go lets the heap reach
// (1+GOGC/100) times the live heap before collecting, so at the default of
// 100 the appliance settled at about 50 MiB resident with 100,000 visits;
// at 50 about 44 MiB, with a collection twice as often (every ~90 scans
// instead of ~180) and no change to the decision's median. A fixed
// GOMEMLIMIT was not chosen: it does not scale with the site, and a site
// whose View outgrew it would collect continuously.
const defaultGCPercent = 50

// setGC applies defaultGCPercent unless GOGC is set (the runtime has
// applied it then).
func setGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// envBool reads a boolean variable; unset, empty or unparsable is false.
func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}
