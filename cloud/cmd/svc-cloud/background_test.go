package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
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

// --webhook-lease reaches the service: a delivery claimed by serve is held
// for the lease given, which the deliveries API shows as the delivery's
// next_attempt_at while its attempt is in flight (97 minutes here, where
// the default, cloud.WebhookLease, is 2).
func TestServe_WebhookLeaseTakesEffect(t *testing.T) {
	const lease = 97 * time.Minute
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // holds the attempt in flight until the test has looked
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(rcv.Close)
	dir := t.TempDir()
	c := startChild(t, dir, "--webhooks-allow-loopback", "--webhook-lease", lease.String())
	t.Cleanup(func() { close(release); _ = c.cmd.Process.Signal(syscall.SIGTERM); <-c.done })
	var keys cloud.SeedKeys
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &keys))
	post := func(path string, body any) map[string]any {
		t.Helper()
		b, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+keys.SecretTest)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", uuid4())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.Equal(t, http.StatusCreated, resp.StatusCode, "POST %s: %v", path, out)
		return out
	}
	ep := post("/webhook-endpoints", map[string]any{"url": rcv.URL + "/hooks", "event_types": []string{"person.created"}})
	before := time.Now()
	post("/people", map[string]any{"name": "Ada Lovelace"})
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("no webhook attempt within 20 s:\n%s", c.stderr)
	}
	status, body := fetch(t, c.base+"/webhook-endpoints/"+ep["id"].(string)+"/deliveries", keys.SecretTest)
	require.Equal(t, http.StatusOK, status, body)
	var page struct {
		Data []struct {
			NextAttemptAt time.Time `json:"next_attempt_at"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Data, 1, body)
	require.WithinDuration(t, before.Add(lease), page.Data[0].NextAttemptAt, time.Minute,
		"held for the lease given, not the default %s: %s", cloud.WebhookLease, body)
}

// uuid4 is a random UUID, for an Idempotency-Key.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
