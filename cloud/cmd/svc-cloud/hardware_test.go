package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/freeport"
)

// apiJSON calls the API with the demo's test-mode secret key and a JSON
// body (nil for none).
func apiJSON(t *testing.T, dir, method, url string, body any) (int, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	var keys cloud.SeedKeys
	require.NoError(t, json.Unmarshal(raw, &keys))
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+keys.SecretTest)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return resp.StatusCode, out
}

// waitUntil polls cond (shared/poll, at most every 100 ms) until it
// holds, failing t with msg when timeout passes first.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !poll.Until(timeout, 100*time.Millisecond, cond) {
		t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
	}
}

// edgeStatus is svc-edge's GET /status.
func edgeStatus(t *testing.T, listen string) edge.StatusResponse {
	t.Helper()
	resp, err := http.Get("http://" + listen + "/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st edge.StatusResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// TestHardware_EndToEnd configures an enrolled appliance's hardware from
// the cloud, through real processes: svc-cloud serve --demo (SQLite, or
// PostgreSQL when SVC_TEST_POSTGRES_URL is set; its embedded broker, as
// enrolment needs), and a svc-edge child enrolled by code and running on
// the configuration it wrote. PATCH /v1/edges/{edge_id} moves a gate's
// reader to another port: the appliance, without restarting, closes the
// old port and takes scans on the new one, and a personal pass scanned
// there opens the gate and reaches the cloud as a punch. Then a document
// whose port is taken is refused by the appliance, which goes on with
// what it drove and tells the cloud why (hardware_error).
func TestHardware_EndToEnd(t *testing.T) {
	eachServeStore(t, func(t *testing.T, args []string) {
		dir := t.TempDir()
		base, _ := startServeURL(t, dir, args...)
		path := enrolDemoEdge(t, base, dir)
		cfg, err := config.Load(path)
		require.NoError(t, err)
		require.NotEmpty(t, cfg.Gates)
		gate := cfg.Gates[0]
		old := gate.Readers[0].Listen

		child := startEdge(t, "run", "--config", path, "--simulate")
		waitUntil(t, 60*time.Second, func() bool {
			status, e := apiJSON(t, dir, http.MethodGet, base+"/edges/"+cfg.EdgeID, nil)
			return status == http.StatusOK && e["state"] == "online" && e["lag"] == 0.0
		}, "the edge did not come online and catch up")
		require.Equal(t, edge.SourceConfig, edgeStatus(t, cfg.Listen).Hardware.Source)

		// A person of the organisation and their personal pass.
		status, people := apiJSON(t, dir, http.MethodGet, base+"/people?limit=1", nil)
		require.Equal(t, http.StatusOK, status, "%v", people)
		person := people["data"].([]any)[0].(map[string]any)["id"].(string)
		status, pass := apiJSON(t, dir, http.MethodGet, base+"/people/"+person+"/pass", nil)
		require.Equal(t, http.StatusOK, status, "%v", pass)
		token := pass["token"].(string)

		moved := freeport.Addr(t)
		hw := map[string]any{"gates": []any{map[string]any{
			"gate_id": gate.ID,
			"readers": []any{map[string]any{"kind": "tcp", "listen": moved}},
			"relay":   map[string]any{"pin": gate.Relay.Pin},
		}}}
		status, e := apiJSON(t, dir, http.MethodPatch, base+"/edges/"+cfg.EdgeID, map[string]any{"hardware": hw})
		require.Equal(t, http.StatusOK, status, "%v", e)
		require.NotNil(t, e["hardware"])

		waitUntil(t, 60*time.Second, func() bool {
			st := edgeStatus(t, cfg.Listen)
			return st.Hardware.Source == edge.SourceCloud && len(st.Gates) == 1 && st.Gates[0].Readers[0] == "tcp "+moved
		}, "the appliance did not take the cloud's hardware")
		_, err = net.DialTimeout("tcp", old, time.Second)
		require.Error(t, err, "the old port %s is closed", old)

		c, err := net.Dial("tcp", moved)
		require.NoError(t, err)
		_, err = fmt.Fprintf(c, "%s\r\n", token)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		waitUntil(t, 30*time.Second, func() bool {
			return strings.Contains(child.stderr.String(), "pin="+gate.Relay.Pin+" level=High")
		}, "the gate's relay did not pulse for the scan on the new port")
		waitUntil(t, 60*time.Second, func() bool {
			status, events := apiJSON(t, dir, http.MethodGet, base+"/attendance-events?person_id="+person, nil)
			return status == http.StatusOK && len(events["data"].([]any)) == 1
		}, "the punch at the moved reader did not reach the cloud")

		// A port the appliance cannot take: it goes on with the moved
		// reader, and tells the cloud why.
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer taken.Close()
		hw["gates"].([]any)[0].(map[string]any)["readers"] = []any{map[string]any{"kind": "tcp", "listen": taken.Addr().String()}}
		status, e = apiJSON(t, dir, http.MethodPatch, base+"/edges/"+cfg.EdgeID, map[string]any{"hardware": hw})
		require.Equal(t, http.StatusOK, status, "%v", e)
		waitUntil(t, 60*time.Second, func() bool { return edgeStatus(t, cfg.Listen).Hardware.Error != "" },
			"the appliance did not say the hardware failed")
		require.Equal(t, "tcp "+moved, edgeStatus(t, cfg.Listen).Gates[0].Readers[0], "what ran goes on")
		waitUntil(t, 3*time.Minute, func() bool {
			_, e := apiJSON(t, dir, http.MethodGet, base+"/edges/"+cfg.EdgeID, nil)
			msg, _ := e["hardware_error"].(string)
			return strings.Contains(msg, "address already in use")
		}, "the cloud was not told why the hardware failed")
	})
}
