package sitetest

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// envChild carries a childSpec to the test binary run as an edge.
const envChild = "SVC_SITETEST_EDGE_CHILD"

// readyLine starts the line a child edge prints once it serves.
const readyLine = "sitetest-edge ready http="

// childSpec is what a child edge runs: its configuration file and sync
// options.
type childSpec struct {
	Config  string      `json:"config"`
	Options EdgeOptions `json:"options"`
}

// MainChild makes the test binary an edge when the harness started it as
// one (Edge.StartChild): it then runs the App until SIGTERM or SIGKILL and
// exits, and never returns. Otherwise it returns at once. A test binary
// whose tests use StartChild calls it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		sitetest.MainChild()
//		os.Exit(m.Run())
//	}
func MainChild() {
	raw := os.Getenv(envChild)
	if raw == "" {
		return
	}
	if err := runChild(raw); err != nil {
		fmt.Fprintln(os.Stderr, "sitetest edge:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runChild is the child's main: the App from the configuration file, as
// svc-edge run --simulate wires it, with the harness's sync timings.
func runChild(raw string) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", envChild, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.Load(spec.Config)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var half *mqttsync.Edge
	var mu sync.Mutex
	app, err := edge.New(cfg, edge.Deps{
		Logger:  log,
		OpenPin: edge.SimulatedPins(slog.New(slog.DiscardHandler)),
		NewSyncer: func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
			h, err := mqttsync.NewEdge(syncConfig(cfg, c, badge, spec.Options, log))
			mu.Lock()
			half = h
			mu.Unlock()
			return h, err
		},
		BrokerState: func() any {
			mu.Lock()
			defer mu.Unlock()
			return half.State()
		},
	})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	select {
	case <-app.Ready():
		fmt.Printf("%s%s\n", readyLine, app.Listening().HTTP)
	case err := <-done:
		return err
	}
	return <-done
}

// Child is an edge running as a child process: the test binary run again
// with the edge's configuration file, so that the test can kill it.
type Child struct {
	// HTTP is the child's local HTTP address.
	HTTP string

	e      *Edge
	cmd    *exec.Cmd
	logs   *lockedbuf.Buffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// StartChild runs the edge in a child process on its configuration file
// and cache, and waits until it serves. The child's log is added to the
// test's output when the test fails.
func (e *Edge) StartChild(t testing.TB) *Child {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != nil || e.child != nil {
		t.Fatal("sitetest: the edge is running already")
	}
	spec, err := json.Marshal(childSpec{Config: e.ConfigPath, Options: e.opts})
	must(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(spec))
	logs := &lockedbuf.Buffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	c := &Child{e: e, cmd: cmd, logs: logs, exited: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), readyLine); ok {
				ready <- addr
			}
		}
	}()
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("child edge %s (pid %d) log:\n%s", e.ID, cmd.Process.Pid, logs.String())
		}
	})
	select {
	case c.HTTP = <-ready:
	case <-c.exited:
		t.Fatalf("child edge exited before serving: %v\n%s", c.err, logs.String())
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		t.Fatalf("child edge did not serve within %v\n%s", wait, logs.String())
	}
	e.child = c
	return c
}

// Kill sends SIGKILL, as a power cut or kill -9 would: no offline
// status, no orderly close of the cache. It returns once the process is
// gone.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
	c.detach()
}

// Stop sends SIGTERM and waits for the child to stop in order, failing t
// unless it exits 0.
func (c *Child) Stop(t testing.TB) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(wait):
		c.Kill()
		t.Fatalf("child edge did not stop within %v", wait)
	}
	c.detach()
	if c.err != nil {
		t.Fatalf("child edge: %v\n%s", c.err, c.logs.String())
	}
}

func (c *Child) detach() {
	c.e.mu.Lock()
	if c.e.child == c {
		c.e.child = nil
	}
	c.e.mu.Unlock()
}

// Scan posts a token to a gate's scan endpoint of the child.
func (c *Child) Scan(t testing.TB, gateID, token string) edge.ScanResponse {
	t.Helper()
	return scan(t, c.HTTP, gateID, token)
}

// ScanAll scans every token at the child's gate, as Edge.ScanAll does.
func (c *Child) ScanAll(t testing.TB, gateID string, tokens []string) []edge.ScanResponse {
	t.Helper()
	return scanAll(t, c.HTTP, gateID, tokens)
}

// Status is the child's GET /status.
func (c *Child) Status(t testing.TB) edge.StatusResponse {
	t.Helper()
	return status(t, c.HTTP)
}
