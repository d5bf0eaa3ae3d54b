package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/svc-vms/svc/edge/update"
)

// version is the release this binary is, set at build time with
// -ldflags "-X main.version=1.4.0"; "dev" for a build without one.
var version = "dev"

// exitTrial is the daemon's exit code when it stops so that the
// supervisor starts a release on trial (EX_TEMPFAIL).
const exitTrial = 75

const superviseUsage = `usage: svc-edge supervise --slots DIR [--trial-timeout D] [--stop-grace D] -- run [--config FILE] [--simulate]
Runs the daemon (the arguments after --) from the current slot of DIR, starts a release the daemon
downloaded on trial, and commits it once its health check passes or rolls back on its own.
On its first start it installs this binary as slot a. systemd runs it (docs/decisions.md).`

// supervise is `svc-edge supervise`.
func supervise(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("supervise", superviseUsage)
	dir := fs.String("slots", env("SVC_EDGE_SLOTS", "/var/lib/svc-edge/slots"), "the slots directory (env SVC_EDGE_SLOTS)")
	trial := fs.Duration("trial-timeout", update.DefaultTrialTimeout, "how long a release on trial has to pass its health check")
	grace := fs.Duration("stop-grace", update.DefaultStopGrace, "how long the daemon has to stop after SIGTERM")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] != "run" {
		return usageError{"supervise: give the daemon's command after --: -- run --config FILE"}
	}
	if *trial <= 0 || *grace <= 0 {
		return usageError{"supervise: --trial-timeout and --stop-grace must be positive"}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	d, installed, err := update.Install(*dir, exe, version)
	if err != nil {
		return err
	}
	if installed {
		log.Info("installed this binary as slot a", "slots", *dir, "version", version)
	}
	s := &update.Supervisor{Slots: d, Args: rest, Stderr: stderr, TrialTimeout: *trial, StopGrace: *grace, Logger: log, Now: time.Now}
	return s.Run(ctx)
}
