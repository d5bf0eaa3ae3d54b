package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/promtest"
)

// logLines decodes the complete lines of a JSON log; a line that is not
// one JSON object fails the test.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	complete := log[:strings.LastIndexByte(log, '\n')+1]
	for _, line := range strings.Split(strings.TrimSpace(complete), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "a log line that is not JSON: %q", line)
		out = append(out, rec)
	}
	return out
}

// fetch GETs url and returns the status and body.
func fetch(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServe_MetricsProbesAndJSONLogs runs serve with --log-format json:
// every line it logs is a JSON object, one of them the access log line of
// each API request; its "serving" line names the admin listener, whose
// /metrics shows the build and the request by its route and passes
// promtool; the API's listener answers /healthz and /readyz.
func TestServe_MetricsProbesAndJSONLogs(t *testing.T) {
	dir := t.TempDir()
	base, stderr := startServeURL(t, dir, "--log-format", "json", "--database-max-conns", "3")
	root := strings.TrimSuffix(base, "/v1")

	var metrics string
	waitUntil(t, 10*time.Second, func() bool {
		for _, rec := range logLines(t, stderr.String()) {
			if rec["msg"] == "serving" {
				metrics, _ = rec["metrics"].(string)
				require.NotEmpty(t, metrics, "the serving line names the metrics URL: %v", rec)
			}
		}
		return metrics != ""
	}, "no serving line in:\n%s", stderr)

	var keys cloud.SeedKeys
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &keys))
	status, _ := fetch(t, base+"/organisation", keys.SecretTest)
	require.Equal(t, http.StatusOK, status)

	status, body := fetch(t, root+"/healthz", "")
	require.Equal(t, http.StatusOK, status, body)
	// Ready once the sync has connected to the embedded broker.
	waitUntil(t, 10*time.Second, func() bool {
		status, body = fetch(t, root+"/readyz", "")
		return status == http.StatusOK
	}, "/readyz did not answer 200")
	require.JSONEq(t, `{"status":"ok","checks":{"database":"ok","migrations":"ok","broker":"ok"}}`, body)

	status, scrape := fetch(t, metrics, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, scrape, `svc_cloud_build_info{goversion="`+runtime.Version()+`",version="dev"} 1`)
	require.Contains(t, scrape, `svc_cloud_http_requests_total{method="GET",route="/v1/organisation",status="2xx"} 1`)
	require.Contains(t, scrape, `svc_cloud_db_connections_max{pool="sqlite_write"} 1`)
	require.Contains(t, scrape, `svc_cloud_db_connections_max{pool="sqlite_read"} 3`, "--database-max-conns sizes the readers")
	require.Contains(t, scrape, "svc_cloud_mqtt_connected 1")
	require.Contains(t, scrape, "process_start_time_seconds ")
	t.Run("promtool", func(t *testing.T) { promtest.CheckMetrics(t, []byte(scrape)) })

	var access map[string]any
	waitUntil(t, 10*time.Second, func() bool {
		for _, rec := range logLines(t, stderr.String()) {
			if rec["msg"] == "request" && rec["route"] == "/v1/organisation" {
				access = rec
			}
		}
		return access != nil
	}, "no access log line in:\n%s", stderr)
	require.Equal(t, float64(200), access["status"])
	// Every line names the process, the same way (a host's name and a
	// random suffix).
	host, err := os.Hostname()
	require.NoError(t, err)
	instance, _ := access["instance"].(string)
	require.Regexp(t, "^"+regexp.QuoteMeta(host)+"-[0-9a-f]{6}$", instance)
	for _, rec := range logLines(t, stderr.String()) {
		require.Equal(t, instance, rec["instance"], "a line without the instance: %v", rec)
	}
	require.NotEmpty(t, access["key_id"])
	require.Equal(t, "test", access["mode"])
	require.NotContains(t, stderr.String(), strings.TrimPrefix(keys.SecretTest, "svc_sk_test_"), "no key in the log")
}
