package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
)

// damagedHelp is what to do about a damaged cache, for the config at
// path.
func damagedHelp(path string) string {
	return fmt.Sprintf("The damaged file is left as it is. See what is wrong with\n"+
		"  svc-edge cache check --config %s\n"+
		"then move it aside, recover the facts still waiting in it and start a new cache, which resyncs from the cloud, with\n"+
		"  svc-edge cache reset --config %s", path, path)
}

// cacheConfig parses the flags of a cache command and loads the config.
func cacheConfig(name, usage string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*config.Config, string, error) {
	fs := newFlagSet("cache "+name, usage)
	path := fs.String("config", env("SVC_EDGE_CONFIG", defaultConfig), "the config file, which names the cache file (env SVC_EDGE_CONFIG)")
	if extra != nil {
		extra(fs)
	}
	if err := parse(fs, args, stderr); err != nil {
		return nil, "", err
	}
	if fs.NArg() > 0 {
		return nil, "", usageError{fmt.Sprintf("cache %s: unexpected argument %q", name, fs.Arg(0))}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return nil, "", err
	}
	return cfg, *path, nil
}

// cacheCheck is `svc-edge cache check`: read the cache file as the daemon
// would, without changing it, and say whether it is sound. It fails (exit
// 1) when the file is damaged, listing what is wrong on stdout.
func cacheCheck(args []string, stdout, stderr io.Writer) error {
	cfg, path, err := cacheConfig("check", "usage: svc-edge cache check [--config FILE]\n"+
		"Reads the cache file (stop svc-edge first) without changing it: exit 0 when it is sound, 1 when it is damaged or unreadable.",
		args, stderr, nil)
	if err != nil {
		return err
	}
	s, err := cache.Check(cfg.CachePath, cache.Options{EdgeID: cfg.EdgeID})
	var damaged *cache.DamagedError
	switch {
	case errors.As(err, &damaged):
		fmt.Fprintf(stdout, "%s: damaged\n", cfg.CachePath)
		for _, p := range damaged.Problems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
		if len(damaged.Problems) == 0 {
			fmt.Fprintf(stdout, "  %v\n", damaged.Err)
		}
		fmt.Fprintf(stdout, "The file was not changed. To move it aside, recover the facts still waiting in it and start a new cache:\n"+
			"  svc-edge cache reset --config %s\n", path)
		return fmt.Errorf("cache check: %s is damaged", cfg.CachePath)
	case err != nil:
		return err
	}
	synced := "never"
	if !s.SyncedAt.IsZero() {
		synced = s.SyncedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(stdout, "%s: ok\n  edge %s, schema %s, %d bytes\n  sequence %d, last synced %s\n"+
		"  %d visits, %d gates, %d keys, %d people\n  %d facts waiting for the cloud\n",
		cfg.CachePath, s.EdgeID, s.Schema, s.Size, s.Seq, synced,
		s.Counts.Visits, s.Counts.Gates, s.Counts.Keys, s.Counts.People, s.Counts.Outbox)
	if s.Journaled > 0 {
		fmt.Fprintf(stdout, "  %d records in the journal, which the next run writes to the file\n", s.Journaled)
	}
	return nil
}

// cacheReset is `svc-edge cache reset`: move a damaged cache file aside
// and start a new one holding the facts that could be read from it.
func cacheReset(args []string, stdout, stderr io.Writer, now time.Time) error {
	var force *bool
	cfg, _, err := cacheConfig("reset", "usage: svc-edge cache reset [--config FILE] [--force]\n"+
		"Moves a damaged cache file aside (stop svc-edge first), recovers the facts still waiting in it into a new cache,\n"+
		"and prints what it recovered and lost. The new cache resyncs from the cloud at the next run.",
		args, stderr, func(fs *flag.FlagSet) {
			force = fs.Bool("force", false, "reset a file that is not damaged: its copy of the site is dropped, and gates wait for the cloud's")
		})
	if err != nil {
		return err
	}
	_, err = cache.Check(cfg.CachePath, cache.Options{EdgeID: cfg.EdgeID})
	switch {
	case errors.Is(err, cache.ErrDamaged):
	case err == nil && !*force:
		return fmt.Errorf("cache reset: %s is not damaged; a reset drops its copy of the site until the cloud sends it again "+
			"(gates wait for it), so pass --force to reset it anyway", cfg.CachePath)
	case errors.Is(err, cache.ErrNoFile):
		return fmt.Errorf("cache reset: %w: `svc-edge run` makes a new cache", err)
	case err != nil && !*force:
		return fmt.Errorf("cache reset: %w (pass --force to reset it anyway)", err)
	}
	rec, err := cache.Reset(cfg.CachePath, cache.Options{EdgeID: cfg.EdgeID}, now)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The old file is now %s, kept as it was.\n", rec.Aside)
	fmt.Fprintf(stdout, "New cache %s: %d facts waiting for the cloud, fact counter %d, %d last punches.\n",
		cfg.CachePath, len(rec.Facts), rec.Counter, rec.Punches)
	for _, f := range rec.Facts {
		fmt.Fprintf(stdout, "  recovered %s %s at %s (counter %d)\n", f.ID, f.Kind, f.At.UTC().Format(time.RFC3339), f.Counter)
	}
	if rec.Journaled > 0 {
		fmt.Fprintf(stdout, "Of these, %d were in the journal only (recorded since the old file was last written).\n", rec.Journaled)
	}
	if rec.Loose > 0 {
		fmt.Fprintf(stdout, "Of these, %d were found outside the outbox, which could not be read whole: the cloud may have them already, and applies each fact once, by its ID.\n", rec.Loose)
	}
	if rec.Counter == 0 && rec.Size > 0 {
		fmt.Fprintln(stdout, "No fact counter could be read: new facts are counted from 1 again (the cloud knows facts by their IDs; only the order of the counters in its audit trail repeats).")
	}
	var lost []string
	if rec.Unreadable > 0 {
		lost = append(lost, fmt.Sprintf("%d pages in or above the outbox could not be read", rec.Unreadable))
	}
	if rec.Undecodable > 0 {
		lost = append(lost, fmt.Sprintf("%d values in the outbox that do not decode", rec.Undecodable))
	}
	if len(rec.Missing) > 0 {
		lost = append(lost, fmt.Sprintf("%d facts the old index names, not recovered: %s", len(rec.Missing), strings.Join(rec.Missing, ", ")))
	}
	if rec.OtherEdge > 0 {
		lost = append(lost, fmt.Sprintf("%d facts of another edge, left out", rec.OtherEdge))
	}
	if len(lost) == 0 {
		fmt.Fprintln(stdout, "Lost: nothing that could be seen.")
	} else {
		fmt.Fprintf(stdout, "Lost: %s.\n", strings.Join(lost, "; "))
	}
	fmt.Fprintln(stdout, "The next `svc-edge run` asks the cloud for the whole site (the new cache has no sequence) and sends the recovered facts.")
	return nil
}
