package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
// before. A request in flight at SIGTERM (its handler reading a body
// the client has only half sent) still gets its normal answer after the
// listener has closed: the servers shut down gracefully, not at once.
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
	waitUntil(t, 10*time.Second, func() bool {
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
	// In flight at SIGTERM: POST /v1/teams with Expect: 100-continue. The
	// server says 100 Continue only once the handler reads the body, so
	// the request is being handled when the first half of the body goes
	// out; the second half is sent after the listener has closed.
	addr := strings.TrimPrefix(root, "http://")
	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	require.NoError(t, slow.SetDeadline(time.Now().Add(delay+30*time.Second)))
	teamBody := `{"name":"Drained team"}`
	half := len(teamBody) / 2
	_, err = fmt.Fprintf(slow, "POST /v1/teams HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nIdempotency-Key: %s\r\nExpect: 100-continue\r\n\r\n",
		addr, keys.SecretTest, len(teamBody), uuid4())
	require.NoError(t, err)
	slowReader := bufio.NewReader(slow)
	cont, err := http.ReadResponse(slowReader, nil)
	require.NoError(t, err)
	refused, _ := io.ReadAll(cont.Body)
	require.Equal(t, http.StatusContinue, cont.StatusCode, "the handler reads the body: %s", refused)
	_, err = io.WriteString(slow, teamBody[:half])
	require.NoError(t, err)

	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	waitUntil(t, delay, func() bool {
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

	// After the delay the listener closes; the request in flight is let
	// finish, and answers as it would have without the drain.
	waitUntil(t, delay+10*time.Second, func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	}, "the listener did not close after the drain delay")
	require.GreaterOrEqual(t, time.Since(signalled), delay, "the listener stayed open for the drain delay")
	_, err = io.WriteString(slow, teamBody[half:])
	require.NoError(t, err, "the connection in flight is still open after the listener closed")
	resp, err := http.ReadResponse(slowReader, nil)
	require.NoError(t, err, "the request in flight at SIGTERM is answered, not cut")
	created, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "the request in flight at SIGTERM: %s", created)
	require.Contains(t, string(created), `"name":"Drained team"`)

	select {
	case err := <-c.done:
		require.NoError(t, err, "exit status after SIGTERM")
	case <-time.After(delay + 20*time.Second):
		t.Fatal("serve did not stop after its drain")
	}
	require.GreaterOrEqual(t, time.Since(signalled), delay, "serve kept serving for the drain delay")
	require.Contains(t, c.stderr.String(), "draining")
}
