package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// daemon is `svc-edge run --simulate` on a config and a cache the cloud
// has filled, with a broker that is not there.
type daemon struct {
	addr, gate, exit string
	key              passtoken.Key
	siteID           string
	visits           []protocol.Visit
	stderr           *lockedbuf.Buffer
	stop             func() error
}

// startDaemon starts the daemon with run's flags beside --config and
// --simulate.
func startDaemon(t *testing.T, flags ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	key, err := passtoken.NewKey(nil)
	require.NoError(t, err)
	d := &daemon{addr: freeport.Addr(t), gate: ids.New(ids.Gate), exit: ids.New(ids.Gate), key: key, siteID: ids.New(ids.Site), stderr: &lockedbuf.Buffer{}}
	edgeID := ids.New(ids.Edge)
	cfg := fmt.Sprintf(`{
  "site": {"mode": "test", "org_id": %q, "site_id": %q},
  "edge_id": %q,
  "broker": {"url": "tcp://%s", "username": "edge", "password": "secret"},
  "data_dir": "data",
  "listen": %q,
  "gates": [
    {"gate_id": %q, "readers": [{"kind": "tcp", "listen": %q}], "relay": {"pin": "GPIO17", "pulse": "1ms"}},
    {"gate_id": %q, "readers": [{"kind": "camera"}], "relay": {"pin": "GPIO22", "pulse": "1ms"}, "when_stale": "fail_open"}
  ]
}`, ids.New(ids.Organisation), d.siteID, edgeID, freeport.Addr(t), d.addr, d.gate, freeport.Addr(t), d.exit)
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))

	// The cloud's snapshot, as the sync half would have stored it.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o700))
	c, err := cache.Open(filepath.Join(dir, "data", "cache.db"), cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	now := time.Now().UTC()
	for range 2 {
		id := ids.New(ids.Visit)
		at, until := now.Add(-time.Hour), now.Add(time.Hour)
		d.visits = append(d.visits, protocol.Visit{ID: id, Status: "expected", ForVisitID: id, ExpectedAt: &at, ExpectedUntil: &until,
			Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: "Vera Visitor"})
	}
	pub := key.Public()
	require.NoError(t, c.ReplaceSnapshot([]protocol.Snapshot{{Seq: 3, Part: 1, Parts: 1,
		Settings: &protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 60},
		Gates:    []protocol.Gate{{ID: d.gate, Name: "Front turnstile", Direction: "entry"}, {ID: d.exit, Name: "Back", Direction: "exit"}},
		Keys:     []protocol.Key{{ID: pub.ID, Public: pub.Key}}, Visits: d.visits}}))
	require.NoError(t, c.MarkSynced(now))
	require.NoError(t, c.Close())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDaemon(ctx, append([]string{"--config", path, "--simulate"}, flags...), io.Discard, d.stderr)
	}()
	d.stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Error("run did not return after its context ended")
			return nil
		}
	})
	t.Cleanup(func() { _ = d.stop() })

	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + d.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, d.stderr.String())
			return d
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v:\n%s", err, d.stderr)
		case <-time.After(5 * time.Millisecond): // the pause between polls
		}
		require.True(t, time.Now().Before(deadline), "the daemon did not serve: %s", d.stderr)
	}
}

func (d *daemon) token(t *testing.T, v protocol.Visit) string {
	t.Helper()
	tok, err := passtoken.Sign(d.key, passtoken.Claims{VisitID: v.ID, SiteID: d.siteID, IssuedAt: time.Now().Add(-time.Hour),
		NotBefore: *v.ExpectedAt, NotAfter: *v.ExpectedUntil})
	require.NoError(t, err)
	return tok
}

func TestRunScanStatus(t *testing.T) {
	d := startDaemon(t)
	tok := d.token(t, d.visits[0])

	code, out, errOut := runCLI(t, "scan", "--gate", d.gate, "--addr", d.addr, tok)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "admitted: check_in visit "+d.visits[0].ID+", fact fact_"), out)
	require.Empty(t, errOut)

	code, out, _ = runCLI(t, "scan", "--gate", d.gate, "--addr", d.addr, tok)
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(out, "refused: already_in visit "+d.visits[0].ID), out)

	code, out, _ = runCLI(t, "scan", "--gate", d.exit, "--addr", "http://"+d.addr, tok)
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "admitted: check_out"), out)

	code, out, _ = runCLI(t, "scan", "--gate", d.gate, "--addr", d.addr, "P1:NOTATOKEN")
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(out, "refused: invalid_token"), out)

	code, _, errOut = runCLI(t, "scan", "--gate", ids.New(ids.Gate), "--addr", d.addr, tok)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "404 Not Found: no gate gate_")

	code, out, errOut = runCLIStdin(t, d.token(t, d.visits[1])+"\n", "scan", "--gate", d.gate, "--addr", d.addr, "-")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, d.visits[1].ID)

	code, out, errOut = runCLI(t, "status", "--addr", d.addr)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"edge       edge_", "sequence   3\n", "cache      fresh\n", "cached     2 visits, 0 people, 2 gates, 1 keys\n",
		"outbox     5 facts waiting, oldest ",
		"broker\n  Connected     false\n  LastContact   never\n", "  Counters      Connects=0 ",
		"gates (hardware from the configuration file)\n  " + d.gate + "  Front turnstile  entry  fail_secure  tcp 127.0.0.1:",
		"  " + d.exit + "  Back             exit   fail_open    camera",
	} {
		require.Contains(t, out, want)
	}

	code, out, errOut = runCLI(t, "status", "--addr", d.addr, "--json")
	require.Equal(t, 0, code, errOut)
	var st edge.StatusResponse
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, 5, st.Outbox.Depth)

	require.NoError(t, d.stop(), d.stderr.String())
	require.Contains(t, d.stderr.String(), "level=INFO msg=\"edge running\"")
	require.Contains(t, d.stderr.String(), `msg="simulated pin out" pin=GPIO17 level=High`, "simulated pins log their pulses")

	code, _, errOut = runCLI(t, "status", "--addr", d.addr)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is svc-edge running?")
	code, _, errOut = runCLI(t, "scan", "--gate", d.gate, "--addr", d.addr, tok)
	require.Equal(t, 2, code, "no daemon is an error, not a refusal")
	require.Contains(t, errOut, "is svc-edge running?")
}

// With --log-format json every line the daemon logs is one JSON object.
func TestRun_LogFormatJSON(t *testing.T) {
	d := startDaemon(t, "--log-format", "json")
	require.NoError(t, d.stop(), d.stderr.String())
	var running bool
	for _, line := range strings.Split(strings.TrimSpace(d.stderr.String()), "\n") {
		var rec struct {
			Level, Msg string
			EdgeID     string `json:"edge_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "a line that is not JSON: %q", line)
		running = running || rec.Msg == "edge running" && rec.Level == "INFO" && strings.HasPrefix(rec.EdgeID, "edge_")
	}
	require.True(t, running, d.stderr.String())
}

// SVC_LOG_LEVEL sets the level when the flag is not given: at warn, the
// daemon's info lines are not written.
func TestRun_LogLevelFromEnvironment(t *testing.T) {
	t.Setenv("SVC_LOG_LEVEL", "warn")
	d := startDaemon(t)
	require.NoError(t, d.stop(), d.stderr.String())
	require.NotContains(t, d.stderr.String(), "level=INFO")
	require.NotContains(t, d.stderr.String(), "edge running")
}

func TestLogFlags_Usage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--config", "x.json", "--log-format", "xml"},
		{"run", "--config", "x.json", "--log-level", "loud"},
		{"enrol", "--cloud", "https://cloud.example", "--log-format", "xml"},
		{"supervise", "--slots", t.TempDir(), "--log-level", "loud", "--", "run"},
	} {
		code, _, errOut := runCLI(t, args...)
		require.Equal(t, 2, code, "%q: %s", args, errOut)
		require.Regexp(t, `--log-(format "xml": want text or json|level "loud": want debug, info, warn or error)`, errOut, "%q", args)
	}
}

func TestScan_Usage(t *testing.T) {
	for _, args := range [][]string{
		{"scan", "P1:X"},
		{"scan", "--gate", "gate_x"},
		{"scan", "--gate", "gate_x", "a", "b"},
		{"status", "extra"},
		{"run", "--config", "x.json", "extra"},
	} {
		code, _, errOut := runCLI(t, args...)
		require.Equal(t, 2, code, "%q: %s", args, errOut)
	}
}

// An appliance without its configuration file is not enrolled: run says
// how to enrol it.
func TestRun_NotEnrolled(t *testing.T) {
	code, _, errOut := runCLI(t, "run", "--config", filepath.Join(t.TempDir(), "none.json"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "none.json does not exist: the appliance is not enrolled; run svc-edge enrol --cloud URL")
}
