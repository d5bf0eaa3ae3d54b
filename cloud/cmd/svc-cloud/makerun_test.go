package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/lockedbuf"
)

// stub stands in for svc-cloud and svc-edge under make run: it notes
// that it started and, on SIGTERM, that it stopped. Its sleep starts
// before the trap is set, so a SIGTERM can never find $p unset and leave
// the sleep running, and it does not hold the test's output pipe, which
// cmd.Wait waits on (under load a stop that came between "sleep &" and
// "p=$!" left the sleep behind and the test waited its 20 s for make).
const stub = `#!/bin/sh
name=${0##*/}
sleep 600 </dev/null >/dev/null 2>&1 & p=$!
trap 'kill $p 2>/dev/null; echo "$name stopped" >> "$STUB_LOG"; exit 0' TERM
echo "$name started" >> "$STUB_LOG"
wait $p
`

// Stopping make run, by a kill of make or by Ctrl-C (SIGINT to the
// whole process group), stops svc-cloud and svc-edge and prints nothing
// alarming (issue 19: its trap 'kill 0' signalled its own shell, which
// ran the trap again until dash overflowed its stack, and make printed
// "Segmentation fault"). The recipe runs as written, with stubs for the
// two binaries (BIN) and nothing built (GO=true).
func TestMakeRun_StopsItsChildrenCleanly(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "Makefile"))
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		group bool
	}{
		{"kill make", syscall.SIGTERM, false},
		{"Ctrl-C", syscall.SIGINT, true},
		{"SIGTERM to the group", syscall.SIGTERM, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, data, log := filepath.Join(dir, "bin"), filepath.Join(dir, "data"), filepath.Join(dir, "stub.log")
			require.NoError(t, os.MkdirAll(bin, 0o755))
			require.NoError(t, os.MkdirAll(data, 0o700))
			for _, name := range []string{"svc-cloud", "svc-edge"} {
				require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755))
			}
			// An enrolled edge: make run skips the enrolment.
			require.NoError(t, os.WriteFile(filepath.Join(data, "edge.json"), []byte("{}"), 0o600))
			cmd := exec.Command(mk, "-C", root, "run", "BIN="+bin, "DATA="+data, "GO=true")
			cmd.Env = append(os.Environ(), "STUB_LOG="+log)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out lockedbuf.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			logged := func() string { b, _ := os.ReadFile(log); return string(b) }
			waitUntil(t, 20*time.Second, func() bool {
				return strings.Contains(logged(), "svc-cloud started") && strings.Contains(logged(), "svc-edge started")
			}, "the stubs did not start: %s", &out)
			for _, name := range []string{"svc-cloud.pid", "svc-edge.pid"} {
				require.FileExists(t, filepath.Join(data, name))
			}

			pid := cmd.Process.Pid
			if c.group {
				pid = -pid
			}
			require.NoError(t, syscall.Kill(pid, c.sig))
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("make run did not stop: %s", &out)
			}
			require.Contains(t, logged(), "svc-cloud stopped", "%s", &out)
			require.Contains(t, logged(), "svc-edge stopped", "%s", &out)
			require.NotContains(t, out.String(), "Segmentation fault")
			require.NotContains(t, out.String(), "make: ***", "make reported its recipe failed")
			require.NoFileExists(t, filepath.Join(data, "svc-cloud.pid"))
		})
	}
}
