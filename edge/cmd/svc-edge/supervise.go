package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/svc-vms/svc/edge/update"
	"github.com/svc-vms/svc/shared/logging"
)

// version is the release this binary is, set at build time with
// -ldflags "-X main.version=1.4.0"; "dev" for a build without one.
var version = "dev"

// exitTrial is the daemon's exit code when it stops so that the
// supervisor starts a release on trial (EX_TEMPFAIL).
const exitTrial = 75

const superviseUsage = `usage: svc-edge supervise --slots DIR [--trial-timeout D] [--stop-grace D] -- run [--config FILE] [--simulate]
       svc-edge supervise --slots STATE --boot DIR --root-a DEV --root-b DEV [--kernel PATH] ... -- run ...
Runs the daemon (the arguments after --) from the current slot of DIR, starts a release the daemon
downloaded on trial, and commits it once its health check passes or rolls back on its own.
On its first start it installs this binary as slot a. systemd runs it (docs/decisions.md).
With --boot, the slots are the appliance image's A/B root partitions (DEV), the boot partition mounted
at DIR holds ab.txt, and STATE is a directory on the data partition: a trial is a reboot into the other
root, which the image's init runs this command again in.`

// supervise is `svc-edge supervise`.
func supervise(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("supervise", superviseUsage)
	dir := fs.String("slots", env("SVC_EDGE_SLOTS", "/var/lib/svc-edge/slots"), "the slots directory (env SVC_EDGE_SLOTS)")
	trial := fs.Duration("trial-timeout", update.DefaultTrialTimeout, "how long a release on trial has to pass its health check")
	grace := fs.Duration("stop-grace", update.DefaultStopGrace, "how long the daemon has to stop after SIGTERM")
	boot := fs.String("boot", "", "the image's boot partition, mounted: the slots are A/B root partitions")
	rootA := fs.String("root-a", "", "root partition A's device (with --boot)")
	rootB := fs.String("root-b", "", "root partition B's device (with --boot)")
	kernel := fs.String("kernel", "kernel/vmlinuz", "where a root image holds its kernel (with --boot)")
	var lc logging.Config
	lc.Register(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return usageError{"supervise: " + err.Error()}
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
	log := lc.New(stderr)
	s := &update.Supervisor{Args: rest, Stderr: stderr, TrialTimeout: *trial, StopGrace: *grace, Logger: log, Now: time.Now}
	if *boot != "" {
		if *rootA == "" || *rootB == "" {
			return usageError{"supervise: --boot needs --root-a and --root-b"}
		}
		p, err := update.OpenPartitions(&update.Partitions{Boot: *boot, A: *rootA, B: *rootB, State: *dir, Kernel: *kernel})
		if err != nil {
			return err
		}
		if err := p.RecordRunning(version); err != nil {
			return err
		}
		s.Slots, s.Exe, s.Reboot = p, exe, func() error { return rebootSystem(*boot) }
		return s.Run(ctx)
	}
	d, installed, err := update.Install(*dir, exe, version)
	if err != nil {
		return err
	}
	if installed {
		log.Info("installed this binary as slot a", "slots", *dir, "version", version)
	}
	s.Slots = d
	return s.Run(ctx)
}
