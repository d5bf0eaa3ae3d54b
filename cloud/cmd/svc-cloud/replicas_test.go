package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServe_RefusesOtherRateLimitsThanALiveReplica, on PostgreSQL: a
// second serve with other --rate-limits than a live one's refuses to
// start, naming the live one; with --allow-rate-limit-change it starts,
// warning; once the first has stopped, the second starts without it.
func TestServe_RefusesOtherRateLimitsThanALiveReplica(t *testing.T) {
	dir := t.TempDir()
	store := engines[1].flags(t) // skips without PostgreSQL
	first := startChild(t, dir, append(store, "--instance-id", "first-replica")...)

	serveArgs := append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--metrics-listen", "", "--mqtt-url", "off",
		"--drain-delay", "0s", "--rate-limits", "pro=6000"}, store...)
	var out bytes.Buffer
	err := run(context.Background(), serveArgs, &out, os.Stderr)
	require.ErrorContains(t, err, "first-replica enforces free=120,growth=600,pro=3000,enterprise=12000")
	require.ErrorContains(t, err, "--allow-rate-limit-change")

	warned := startServe(t, t.TempDir(), append(store, "--rate-limits", "pro=6000", "--allow-rate-limit-change", "--kek-file", dir+"/kek")...)
	require.Contains(t, warned.String(), "rate limits differ from a live replica")

	require.NoError(t, first.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-first.done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the first replica did not stop")
	}
	// The one still running enforces pro=6000 too: the third agrees
	// with it, and the first left.
	third := startServe(t, t.TempDir(), append(store, "--rate-limits", "pro=6000", "--kek-file", dir+"/kek")...)
	require.False(t, strings.Contains(third.String(), "rate limits differ"), third.String())
}
