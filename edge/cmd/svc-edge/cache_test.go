package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// asMain makes the test binary run svc-edge's main when this variable is
// set, so a test runs the real command as a child process: a crash is
// the child's, seen as its exit.
const asMain = "SVC_EDGE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// runProcess runs svc-edge with args as a child process and returns its
// exit code and output.
func runProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

// cacheSite is a config file and its cache: a few visits and facts
// waiting for the cloud.
type cacheSite struct {
	config, cache string
	facts         []protocol.Fact
}

func newCacheSite(t *testing.T) *cacheSite {
	t.Helper()
	dir := t.TempDir()
	edgeID, gateID := ids.New(ids.Edge), ids.New(ids.Gate)
	cfg := fmt.Sprintf(`{
  "site": {"mode": "test", "org_id": %q, "site_id": %q},
  "edge_id": %q,
  "broker": {"url": "tcp://%s", "username": "edge", "password": "secret"},
  "data_dir": "data",
  "listen": %q,
  "gates": [{"gate_id": %q, "readers": [{"kind": "camera"}], "relay": {"pin": "GPIO17", "pulse": "1ms"}}]
}`, ids.New(ids.Organisation), ids.New(ids.Site), edgeID, freeport.Addr(t), freeport.Addr(t), gateID)
	s := &cacheSite{config: filepath.Join(dir, "config.json"), cache: filepath.Join(dir, "data", "cache.db")}
	require.NoError(t, os.WriteFile(s.config, []byte(cfg), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Dir(s.cache), 0o700))
	c, err := cache.Open(s.cache, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	var changes []protocol.Change
	for i := range 30 {
		id := ids.New(ids.Visit)
		at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		changes = append(changes, protocol.Change{Seq: uint64(i + 1), At: at, Visit: &protocol.Visit{ID: id, Status: "expected", ForVisitID: id,
			ExpectedAt: &at, Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: "Vera Visitor"}})
	}
	_, err = c.Apply(changes)
	require.NoError(t, err)
	for _, ch := range changes[:3] {
		f, err := c.Record(cache.LocalChange{}, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn,
			At: time.Date(2026, 3, 2, 9, 1, 0, 0, time.UTC), GateID: gateID, VisitID: ch.Visit.ID})
		require.NoError(t, err)
		s.facts = append(s.facts, f)
	}
	require.NoError(t, c.Close())
	return s
}

// damage rewrites the cache file with what fn makes of its bytes and
// returns them.
func (s *cacheSite) damage(t *testing.T, fn func(b []byte) []byte) []byte {
	t.Helper()
	b, err := os.ReadFile(s.cache)
	require.NoError(t, err)
	b = fn(b)
	require.NoError(t, os.WriteFile(s.cache, b, 0o600))
	return b
}

func (s *cacheSite) unchanged(t *testing.T, want []byte) {
	t.Helper()
	got, err := os.ReadFile(s.cache)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the damaged file was changed")
}

func TestRun_DamagedCacheStopsWithWhatToDo(t *testing.T) {
	for name, fn := range map[string]func(b []byte) []byte{
		"empty":                     func(b []byte) []byte { return b[:0] },
		"truncated after its metas": func(b []byte) []byte { return b[:2*os.Getpagesize()+100] },
		"first data page overwritten": func(b []byte) []byte {
			copy(b[2*os.Getpagesize():], bytes.Repeat([]byte{0xA5}, 3*os.Getpagesize()))
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newCacheSite(t)
			damaged := s.damage(t, fn)

			code, _, errOut := runProcess(t, "run", "--config", s.config, "--simulate")
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, "svc-edge: edge: open cache: cache file "+s.cache+" is damaged: ")
			require.Contains(t, errOut, "svc-edge cache check --config "+s.config)
			require.Contains(t, errOut, "svc-edge cache reset --config "+s.config)
			s.unchanged(t, damaged)

			code, out, errOut := runProcess(t, "cache", "check", "--config", s.config)
			require.Equal(t, 1, code, errOut)
			require.True(t, strings.HasPrefix(out, s.cache+": damaged\n"), out)
			require.Contains(t, errOut, "svc-edge: cache check: "+s.cache+" is damaged")
			s.unchanged(t, damaged)
		})
	}
}

func TestCacheCheck_Sound(t *testing.T) {
	s := newCacheSite(t)
	code, out, errOut := runCLI(t, "cache", "check", "--config", s.config)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, s.cache+": ok\n")
	require.Contains(t, out, "sequence 30, last synced never")
	require.Contains(t, out, "30 visits")
	require.Contains(t, out, "3 facts waiting for the cloud")

	code, _, errOut = runCLI(t, "cache", "reset", "--config", s.config)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is not damaged")
	require.Contains(t, errOut, "--force")

	code, _, errOut = runCLI(t, "cache", "check", "--config", s.config, "extra")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "extra"`)
}

func TestCacheReset_RecoversTheFacts(t *testing.T) {
	s := newCacheSite(t)
	damaged := s.damage(t, func(b []byte) []byte { clear(b[:2*os.Getpagesize()]); return b }) // both meta pages
	code, _, _ := runProcess(t, "run", "--config", s.config, "--simulate")
	require.Equal(t, 1, code)

	now := time.Now().UTC()
	code, out, errOut := runProcess(t, "cache", "reset", "--config", s.config)
	require.Equal(t, 0, code, errOut)
	aside := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "The old file is now "); ok {
			aside = strings.TrimSuffix(rest, ", kept as it was.")
		}
	}
	require.True(t, strings.HasPrefix(aside, s.cache+".damaged-"), out)
	at, err := time.Parse("20060102T150405Z", strings.TrimPrefix(aside, s.cache+".damaged-"))
	require.NoError(t, err)
	require.WithinDuration(t, now, at, time.Minute)
	kept, err := os.ReadFile(aside)
	require.NoError(t, err)
	require.True(t, bytes.Equal(damaged, kept), "the damaged file is kept as it was")
	require.Contains(t, out, "3 facts waiting for the cloud, fact counter 3")
	for _, f := range s.facts {
		require.Contains(t, out, "recovered "+f.ID+" check_in")
	}

	code, out, errOut = runCLI(t, "cache", "check", "--config", s.config)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sequence 0")
	require.Contains(t, out, "0 visits")
	require.Contains(t, out, "3 facts waiting for the cloud")
	c, err := cache.Open(s.cache, cache.Options{})
	require.NoError(t, err)
	defer c.Close()
	waiting, err := c.Outbox(0)
	require.NoError(t, err)
	require.Equal(t, s.facts, waiting, "the same facts, IDs and counters")
}
