package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
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
	log := slog.New(slog.NewTextHandler(stderr, nil))
	deps := edge.Deps{Logger: log}
	if *simulate {
		deps.OpenPin = edge.SimulatedPins(log)
	}

	// The MQTT edge half (sync/mqttsync), made by the App once the cache
	// is open: the cache is its store.
	var half atomic.Pointer[mqttsync.Edge]
	deps.NewSyncer = func(c *cache.Cache) (edge.Syncer, error) {
		e, err := mqttsync.NewEdge(mqttsync.EdgeConfig{
			BrokerURL: cfg.Broker.URL, Username: cfg.Broker.Username, Password: cfg.Broker.Password,
			Site: cfg.Site, EdgeID: cfg.EdgeID, Store: c, Logger: log, Software: software,
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
	return app.Run(ctx)
}

// envBool reads a boolean variable; unset, empty or unparsable is false.
func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}
