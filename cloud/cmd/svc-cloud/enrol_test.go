package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
)

// svcEdge is the svc-edge binary, built once for the tests that run it as
// a child process beside svc-cloud (the two are separate main packages).
var svcEdge = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "svc-edge-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "svc-edge")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/svc-vms/svc/edge/cmd/svc-edge")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build svc-edge: %w\n%s", err, out)
	}
	return bin, nil
})

// edgeChild is svc-edge running as a child process.
type edgeChild struct {
	cmd    *exec.Cmd
	lines  chan string // its stdout, line by line
	stderr *lockedbuf.Buffer
	done   chan error
}

func startEdge(t *testing.T, args ...string) *edgeChild {
	t.Helper()
	bin, err := svcEdge()
	require.NoError(t, err)
	c := &edgeChild{cmd: exec.Command(bin, args...), lines: make(chan string, 100), stderr: &lockedbuf.Buffer{}, done: make(chan error, 1)}
	c.cmd.Stderr = c.stderr
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("svc-edge %s stderr:\n%s", args[0], c.stderr)
		}
	})
	return c
}

// running fails t when the child has exited: a poll that waits on it
// would only run out its time.
func (c *edgeChild) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup, which waits on it
		t.Fatalf("svc-edge %s exited (%v); stderr:\n%s", c.cmd.Args[1], err, c.stderr)
	default:
	}
}

// exited waits up to d for the child to exit and returns how it ended. It
// leaves the result for the cleanup, which waits on it too: taking it
// made the cleanup wait out its 20 seconds on a child long gone.
func (c *edgeChild) exited(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("svc-edge %s did not exit within %v; stderr:\n%s", c.cmd.Args[1], d, c.stderr)
		return nil
	}
}

// line waits for a line of the child's stdout that starts with prefix
// and returns the rest.
func (c *edgeChild) line(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			require.True(t, ok, "svc-edge ended before printing %q; stderr:\n%s", prefix, c.stderr)
			if rest, found := strings.CutPrefix(strings.TrimSpace(l), prefix); found {
				return rest
			}
		case <-timeout:
			t.Fatalf("svc-edge printed no %q; stderr:\n%s", prefix, c.stderr)
		}
	}
}

// enrolDemoEdge enrols a svc-edge child against the cloud at base (.../v1)
// by its code, claimed with svc-cloud edges claim and the demo's key in
// dir, and returns the configuration file it wrote.
func enrolDemoEdge(t *testing.T, base, dir string) string {
	t.Helper()
	root := strings.TrimSuffix(base, "/v1")
	path := filepath.Join(dir, "edge.json")
	child := startEdge(t, "enrol", "--cloud", root, "--data", filepath.Join(dir, "edge"), "--config", path,
		"--listen", freeport.Addr(t), "--kiosk-listen", freeport.Addr(t),
		"--reader-port", fmt.Sprint(freeport.Port(t)))
	code := strings.Fields(child.line(t, "enrolment code:"))[0]
	require.Regexp(t, `^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`, code)
	out := runCLI(t, "edges", "claim", code, "--api", root, "--data", dir, "--name", "Demo edge")
	require.Contains(t, out, "claimed "+code)
	child.line(t, "enrolled as ")
	require.NoError(t, child.exited(t, 30*time.Second), "svc-edge enrol exits 0 once enrolled")
	return path
}

// api calls the API with the demo's test-mode secret key.
func api(t *testing.T, dir, method, url string) (int, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	var keys cloud.SeedKeys
	require.NoError(t, json.Unmarshal(raw, &keys))
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+keys.SecretTest)
	if method == http.MethodPost {
		req.Header.Set("Idempotency-Key", "5f0c6b8e-3c1a-4f4e-9d55-"+fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff))
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

// eachServeStore runs fn with the flags that give svc-cloud serve its
// store: none (SQLite in the data directory), and, when
// SVC_TEST_POSTGRES_URL is set, --database-url on a schema of its own (the
// database's other schemas hold secrets sealed with other tests'
// key-encryption keys).
func eachServeStore(t *testing.T, fn func(t *testing.T, args []string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, nil) })
	pg := os.Getenv("SVC_TEST_POSTGRES_URL")
	if pg == "" {
		return
	}
	t.Run("postgres", func(t *testing.T) {
		sep := "?"
		if strings.Contains(pg, "?") {
			sep = "&"
		}
		fn(t, []string{"--database-url", pg + sep + "search_path=" + postgrestest.NewSchema(t, pg)})
	})
}

// TestEnrol_EndToEnd is make run's path through real processes: svc-cloud
// serve --demo (SQLite, or PostgreSQL when SVC_TEST_POSTGRES_URL is set;
// the embedded broker over TLS), a svc-edge child that enrols by code, the
// code claimed with svc-cloud edges claim, the configuration it wrote
// (0600, the broker's CA, a kiosk), then svc-edge run on it: the fleet API
// shows it online with what its status says, and revoking it there shows
// it revoked and offline.
func TestEnrol_EndToEnd(t *testing.T) {
	eachServeStore(t, func(t *testing.T, args []string) {
		dir := t.TempDir()
		base, _ := startServeURL(t, dir, args...)
		path := enrolDemoEdge(t, base, dir)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "it holds the broker password")
		cfg, err := config.Load(path)
		require.NoError(t, err)
		require.Equal(t, "test", cfg.Site.Mode)
		require.Equal(t, filepath.Join(dir, "edge"), cfg.DataDir)
		require.Regexp(t, `^ssl://127\.0\.0\.1:[1-9][0-9]*$`, cfg.Broker.URL, "the demo edge connects over TLS")
		ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
		require.NoError(t, err)
		require.Equal(t, ca, cfg.Broker.CA, "with the CA made under the data directory")
		require.NotNil(t, cfg.Kiosk, "the demo edge serves its kiosk")
		require.NotEmpty(t, cfg.Gates)
		key, err := os.Stat(filepath.Join(dir, "edge", "identity-key.pem"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), key.Mode().Perm())

		run := startEdge(t, "run", "--config", path, "--simulate")
		var edge map[string]any
		sitetest.Eventually(t, 60*time.Second, func() bool {
			run.running(t)
			status, e := api(t, dir, http.MethodGet, base+"/edges/"+cfg.EdgeID)
			require.Equal(t, http.StatusOK, status, "%v", e)
			// Its first status goes out as it connects, before its
			// snapshot: the figures are those of that moment.
			edge = e
			return e["state"] == "online" && e["cache"] != nil
		}, "the edge did not come online and sync")
		require.True(t, strings.HasPrefix(edge["software_version"].(string), "svc-edge"), "software %v", edge["software_version"])
		require.Equal(t, true, edge["enrolled_by_code"])
		require.Equal(t, edge["feed_head"].(float64)-edge["applied_seq"].(float64), edge["lag"])
		require.Greater(t, edge["disk_free_bytes"], 0.0)
		require.Less(t, edge["clock_skew_seconds"], 5.0)
		require.Equal(t, false, edge["clock_skew_warning"])

		_, list := api(t, dir, http.MethodGet, base+"/edges?state=online")
		require.Len(t, list["data"], 1)

		status, revoked := api(t, dir, http.MethodPost, base+"/edges/"+cfg.EdgeID+"/revoke")
		require.Equal(t, http.StatusOK, status, "%v", revoked)
		require.NotNil(t, revoked["revoked_at"])
		require.Equal(t, "offline", revoked["state"])
	})
}

// TestEnrol_Mosquitto is the installer's path on a Mosquitto that keeps
// accounts in its dynamic security plugin, through real processes:
// svc-cloud serve with the plugin's admin (SQLite, or PostgreSQL when
// SVC_TEST_POSTGRES_URL is set) makes its own account there; a claim while
// Mosquitto is down is refused (503) and makes no edge; once it is back
// the same code is claimed, and svc-edge run connects with the
// credentials it collected and syncs; revoked, the appliance is cut off
// and its credentials are refused.
func TestEnrol_Mosquitto(t *testing.T) {
	eachServeStore(t, func(t *testing.T, args []string) {
		b := dynsectest.Start(t)
		dir := t.TempDir()
		args = append(args, "--mqtt-url", b.URL, "--mqtt-username", "svc-cloud-test", "--mqtt-password", "cloud-secret",
			"--mqtt-dynsec-username", dynsectest.Admin, "--mqtt-dynsec-password", b.AdminPassword, "--mqtt-dynsec-every", "200ms")
		base, _ := startServeURL(t, dir, args...)
		root := strings.TrimSuffix(base, "/v1")

		path := filepath.Join(dir, "edge.json")
		child := startEdge(t, "enrol", "--cloud", root, "--data", filepath.Join(dir, "edge"), "--config", path,
			"--listen", freeport.Addr(t), "--kiosk-listen", freeport.Addr(t),
			"--reader-port", fmt.Sprint(freeport.Port(t)))
		code := strings.Fields(child.line(t, "enrolment code:"))[0]

		b.Stop()
		var out bytes.Buffer
		err := run(context.Background(), []string{"edges", "claim", code, "--api", root, "--data", dir}, &out, os.Stderr)
		require.ErrorContains(t, err, "503 unavailable: The service could not reach its MQTT broker")
		_, list := api(t, dir, http.MethodGet, base+"/edges")
		require.Empty(t, list["data"], "no edge was made")

		b.Start()
		out.Reset()
		require.NoError(t, run(context.Background(), []string{"edges", "claim", code, "--api", root, "--data", dir}, &out, os.Stderr))
		child.line(t, "enrolled as ")
		require.NoError(t, child.exited(t, 30*time.Second), "svc-edge enrol exits 0 once enrolled")
		cfg, err := config.Load(path)
		require.NoError(t, err)
		require.Equal(t, b.URL, cfg.Broker.URL, "the appliance connects to Mosquitto")

		run := startEdge(t, "run", "--config", path, "--simulate")
		sitetest.Eventually(t, 60*time.Second, func() bool {
			run.running(t)
			status, e := api(t, dir, http.MethodGet, base+"/edges/"+cfg.EdgeID)
			require.Equal(t, http.StatusOK, status, "%v", e)
			// Online, and its cache holds the site's gates: the status
			// it sends after its snapshot, through the cloud's account.
			return e["state"] == "online" && e["cache"] != nil && e["cache"].(map[string]any)["gates"].(float64) > 0
		}, "the edge did not come online and sync through Mosquitto")

		status, revoked := api(t, dir, http.MethodPost, base+"/edges/"+cfg.EdgeID+"/revoke")
		require.Equal(t, http.StatusOK, status, "%v", revoked)
		ctl, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
		require.NoError(t, err)
		defer ctl.Close()
		sitetest.Eventually(t, 30*time.Second, func() bool { return disabled(t, ctl, cfg.EdgeID) },
			"the revoked edge's account was not disabled")
		_, err = dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: cfg.Broker.Username, Password: cfg.Broker.Password, ClientID: cfg.EdgeID})
		require.Error(t, err, "its credentials are refused")
		require.Contains(t, b.Log(), "Client "+cfg.EdgeID+" been disconnected by administrative action", "Mosquitto 2.0.11's words for a kick")
	})
}

// disabled reports whether Mosquitto's account of the edge is disabled.
func disabled(t *testing.T, ctl *dynsec.Control, edgeID string) bool {
	t.Helper()
	clients, err := ctl.ListClients(t.Context())
	require.NoError(t, err)
	for _, c := range clients {
		if c.Username == edgeID {
			return c.Disabled
		}
	}
	t.Fatalf("Mosquitto has no account of edge %s", edgeID)
	return false
}

// TestEnrol_KioskShowsCode: while svc-edge run --cloud enrols, a tablet
// at the kiosk's address sees the code the console shows (as does the
// status page on the local API's address), in the kiosk's own page and
// words; once the code is claimed, the same address serves the kiosk, and
// the tablet gets its pairing page.
func TestEnrol_KioskShowsCode(t *testing.T) {
	dir := t.TempDir()
	base, _ := startServeURL(t, dir)
	root := strings.TrimSuffix(base, "/v1")
	kioskURL := "http://" + freeport.Addr(t)
	statusURL := "http://" + freeport.Addr(t)
	child := startEdge(t, "run", "--simulate", "--cloud", root, "--data", filepath.Join(dir, "edge"), "--config", filepath.Join(dir, "edge.json"),
		"--listen", strings.TrimPrefix(statusURL, "http://"), "--kiosk-listen", strings.TrimPrefix(kioskURL, "http://"),
		"--reader-port", fmt.Sprint(freeport.Port(t)))
	code := strings.Fields(child.line(t, "enrolment code:"))[0]
	cats, err := kiosk.LoadCatalogues()
	require.NoError(t, err)
	en := cats["en"]

	get := func(url string) (int, string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, html.UnescapeString(string(b)), err
	}
	for _, u := range []string{kioskURL + "/", kioskURL + "/pair", statusURL + "/"} {
		status, page, err := get(u)
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s: the kiosk is not in service yet", u)
		require.Contains(t, page, en.T("enrol.title"), u)
		require.Contains(t, page, `<p class="code">`+code+`</p>`, "%s shows the console's code", u)
		require.Contains(t, page, en.T("enrol.cloud", root), u)
	}

	out := runCLI(t, "edges", "claim", code, "--api", root, "--data", dir, "--name", "Demo edge")
	require.Contains(t, out, "claimed "+code)
	child.line(t, "enrolled as ")
	// The enrolment page closes and the daemon opens the kiosk on the
	// same address: the tablet's next request lands on the pairing page.
	var page string
	sitetest.Eventually(t, 60*time.Second, func() bool {
		child.running(t)
		status, p, err := get(kioskURL + "/")
		page = p
		return err == nil && status == http.StatusOK && strings.Contains(page, en.T("pair.title"))
	}, "the kiosk did not serve its pairing page")
	require.NotContains(t, page, code)
}
