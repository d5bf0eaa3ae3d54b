package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// TestServe_DrainsOnSIGTERM: after SIGTERM, /readyz answers 503
// (draining) at once while API requests on new connections still
// succeed; the process exits 0 once the drain delay has passed, not
// before.
func TestServe_DrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	const delay = 4 * time.Second
	c := startChild(t, dir, "--drain-delay", delay.String())
	root := strings.TrimSuffix(c.base, "/v1")
	var keys cloud.SeedKeys
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &keys))

	// Ready once the sync has connected to the embedded broker.
	poll(t, 10*time.Second, func() bool {
		status, _ := fetch(t, root+"/readyz", "")
		return status == http.StatusOK
	}, "/readyz did not answer 200")

	// A new connection for every request: the listener must still
	// accept them.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url, key string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := fresh.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	poll(t, delay, func() bool {
		status, body := get(root+"/readyz", "")
		if status == http.StatusServiceUnavailable {
			require.Contains(t, body, `"status":"draining"`)
			return true
		}
		require.Equal(t, http.StatusOK, status, body)
		return false
	}, "/readyz did not turn 503 within the drain delay")
	status, body := get(c.base+"/organisation", keys.SecretTest)
	require.Equal(t, http.StatusOK, status, "a request during the drain is served: %s", body)
	require.Less(t, time.Since(signalled), delay, "the checks above ran within the drain delay")

	select {
	case err := <-c.done:
		require.NoError(t, err, "exit status after SIGTERM")
	case <-time.After(delay + 20*time.Second):
		t.Fatal("serve did not stop after its drain")
	}
	require.GreaterOrEqual(t, time.Since(signalled), delay, "serve kept serving for the drain delay")
	require.Contains(t, c.stderr.String(), "draining")
}
