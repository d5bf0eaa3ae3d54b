package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveConfig parses serve's flags from args, as serve does.
func serveConfig(t *testing.T, args ...string) Config {
	t.Helper()
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.serveFlags(fs)
	require.NoError(t, parse(fs, args, io.Discard))
	return cfg
}

// The maintenance sweep (pending bookings past their confirmation window
// stored as expired, ended periods closed, old keys deleted) runs every
// minute unless told otherwise, as docs/decisions.md promises for the
// booking sweep (issue 19: the code ran it every 10 minutes);
// SVC_MAINTAIN_EVERY and --maintain-every change it, the flag winning.
func TestServe_MaintainEveryDefaultsToAMinute(t *testing.T) {
	t.Setenv("SVC_MAINTAIN_EVERY", "")
	require.NoError(t, os.Unsetenv("SVC_MAINTAIN_EVERY"))
	require.Equal(t, time.Minute, serveConfig(t).MaintainEvery)

	t.Setenv("SVC_MAINTAIN_EVERY", "90s")
	require.Equal(t, 90*time.Second, serveConfig(t).MaintainEvery)
	require.Equal(t, 5*time.Second, serveConfig(t, "--maintain-every", "5s").MaintainEvery)
}

// --maintain-every reaches serve's maintenance loop: with 1s, a serve
// sweeps again and again within seconds (each sweep is a debug line),
// where the default would sweep once, at start, in the same time.
func TestServe_MaintainEveryTakesEffect(t *testing.T) {
	c := startChild(t, t.TempDir(), "--maintain-every", "1s", "--log-level", "debug")
	t.Cleanup(func() { _ = c.cmd.Process.Signal(os.Interrupt); <-c.done })
	sweeps := func() int { return strings.Count(c.stderr.String(), `msg="maintenance sweep" `) }
	if !assert.Eventually(t, func() bool { return sweeps() >= 3 }, 20*time.Second, 50*time.Millisecond) {
		t.Fatalf("want three sweeps within 20 s, got %d:\n%s", sweeps(), c.stderr)
	}
	require.Contains(t, c.stderr.String(), `msg="maintenance sweep" instance=`)
	require.Contains(t, c.stderr.String(), "every=1s")
}
