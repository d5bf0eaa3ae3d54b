package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// startServe runs `svc-cloud serve --demo` on dir as a child process on
// free ports, waits until it serves, and stops it (SIGTERM, exit 0) when
// the test ends. It returns the child's stderr.
func startServe(t *testing.T, dir string, args ...string) *lockedbuf.Buffer {
	t.Helper()
	_, stderr := startServeURL(t, dir, args...)
	return stderr
}

// startServeURL is startServe, returning the API's base URL (.../v1) too.
func startServeURL(t *testing.T, dir string, args ...string) (string, *lockedbuf.Buffer) {
	t.Helper()
	c := startChild(t, dir, args...)
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-c.done:
			require.NoError(t, err, "exit status after SIGTERM")
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			t.Error("serve did not stop on SIGTERM")
		}
	})
	return c.base, c.stderr
}

// child is a running `svc-cloud serve`.
type child struct {
	cmd    *exec.Cmd
	base   string            // the API's base URL, .../v1
	stderr *lockedbuf.Buffer // its log
	done   chan error        // cmd.Wait's result, once it exits
}

// startChild runs `svc-cloud serve --demo` on dir as a child process on
// free ports, without a drain delay unless args set one, and waits until
// it serves. The process is killed when the test ends if it still runs.
func startChild(t *testing.T, dir string, args ...string) *child {
	t.Helper()
	args = append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0",
		"--mqtt-tls-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--demo", "--drain-delay", "0s"}, args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SVC_CLOUD_AS_MAIN=1")
	stderr := &lockedbuf.Buffer{}
	cmd.Stderr = io.MultiWriter(stderr, os.Stderr)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, stderr: stderr, done: make(chan error, 1)}
	sc := bufio.NewScanner(stdout)
	served := false
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "svc-cloud is serving "); ok {
			served, c.base = true, rest
			break
		}
	}
	go func() { // keep draining stdout, then reap the process
		for sc.Scan() {
		}
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // after the caller's cleanup, which stops it first
	require.True(t, served, "serve printed its URL; stderr:\n%s", stderr)
	return c
}

// TestServe_EdgeBrokerURL: with --mqtt-edge-url, an appliance enrolled by
// code is told the broker's address as appliances reach it, not the
// listener's (which is 127.0.0.1 when the broker listens on every
// interface: the appliance would dial itself), and the made certificate
// covers that host, so the appliance's TLS handshake verifies.
func TestServe_EdgeBrokerURL(t *testing.T) {
	dir := t.TempDir()
	base, _ := startServeURL(t, dir, "--mqtt-tls-listen", "0.0.0.0:0", "--mqtt-edge-url", "ssl://broker.example.test:8884")
	cfg, err := config.Load(enrolDemoEdge(t, base, dir))
	require.NoError(t, err)
	require.Equal(t, "ssl://broker.example.test:8884", cfg.Broker.URL)
	raw, err := os.ReadFile(filepath.Join(dir, "tls", "broker.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(raw)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.NoError(t, cert.VerifyHostname("broker.example.test"))
}

// TestServe_EdgeOverTLS (issue 15 item 9): the embedded broker serves MQTT
// over TLS with a CA made under the data directory; an edge configured as
// serve --demo writes edge.json (its CA inline) connects and syncs; a
// client holding the system's roots or another CA is refused in the
// handshake, before its password is sent.
func TestServe_EdgeOverTLS(t *testing.T) {
	dir := t.TempDir()
	base, _ := startServeURL(t, dir)
	cfg, err := config.Load(enrolDemoEdge(t, base, dir))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(cfg.Broker.URL, "ssl://127.0.0.1:"), cfg.Broker.URL)

	// The real edge half, as svc-edge wires it (daemon.go), on a cache.
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"), cache.Options{EdgeID: cfg.EdgeID})
	require.NoError(t, err)
	defer c.Close()
	half, err := mqttsync.NewEdge(mqttsync.EdgeConfig{
		BrokerURL: cfg.Broker.URL, Username: cfg.Broker.Username, Password: cfg.Broker.Password, TLS: cfg.Broker.TLS(),
		Site: cfg.Site, EdgeID: cfg.EdgeID, Store: c, Logger: slog.New(slog.DiscardHandler), Software: "test",
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- half.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sitetest.Eventually(t, 20*time.Second, func() bool {
		return !c.View().SyncedAt().IsZero() && (len(c.View().Keys()) > 0 || c.View().Counts().Gates > 0)
	}, "the edge did not sync over TLS")
	require.Positive(t, c.View().Counts().Gates, "the site's gates came over TLS")

	addr := strings.TrimPrefix(cfg.Broker.URL, "ssl://")
	other, err := broker.EnsureCerts(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	otherPool := x509.NewCertPool()
	require.True(t, otherPool.AppendCertsFromPEM(other.CA))
	for name, roots := range map[string]*x509.CertPool{"the system's roots": nil, "another CA": otherPool} {
		opts := paho.NewClientOptions().AddBroker("ssl://" + addr).SetClientID(cfg.EdgeID + "x").
			SetUsername(cfg.Broker.Username).SetPassword(cfg.Broker.Password).SetProtocolVersion(4).SetAutoReconnect(false).
			SetConnectTimeout(5 * time.Second).SetTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		tok := paho.NewClient(opts).Connect()
		require.True(t, tok.WaitTimeout(10*time.Second))
		var unknown x509.UnknownAuthorityError
		require.ErrorAs(t, tok.Error(), &unknown, "%s: refused in the TLS handshake", name)
	}
}

// TestServe_DataFilesPrivate (issue 15 item 8): a data directory from
// before, world-readable, comes out private after serve starts (the
// directory 0700, every file in it 0600, each change logged), and the
// secrets in its database are sealed.
func TestServe_DataFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	runCLI(t, "seed", "--data", dir, "--json")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("an operator's file"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "backup"), 0o755))
	for _, name := range []string{"cloud.db", "kek"} {
		require.NoError(t, os.Chmod(filepath.Join(dir, name), 0o644))
	}
	require.NoError(t, os.Chmod(dir, 0o755))

	stderr := startServe(t, dir)
	require.Contains(t, stderr.String(), "made a data file private")
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), dir)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		names = append(names, e.Name())
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		require.Equal(t, want, info.Mode().Perm(), e.Name())
	}
	for _, want := range []string{"cloud.db", "cloud.db-wal", "cloud.db-shm", "kek", "demo.json", "tls", "notes.txt", "backup"} {
		require.Contains(t, names, want)
	}
	tlsFiles, err := os.ReadDir(filepath.Join(dir, "tls"))
	require.NoError(t, err)
	require.Len(t, tlsFiles, 4)
	for _, e := range tlsFiles {
		info, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "cloud.db")+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name, value FROM secrets`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		var v []byte
		require.NoError(t, rows.Scan(&name, &v))
		require.True(t, kek.IsSealed(v), "secret %s is sealed", name)
		n++
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, n, 3, "cursor key, pass-link key, the cloud's broker password")
}

// TestPasskeys_Rotate: the command makes a new signing key and sets the
// one it replaces to retire after the grace.
func TestPasskeys_Rotate(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	type out struct {
		New      passKeyRow   `json:"new"`
		Retiring []passKeyRow `json:"retiring"`
	}
	var first, second out
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "passkeys", "rotate", "--data", dir, "--org", seed.OrganisationID, "--mode", "test", "--json")), &first))
	require.Empty(t, first.Retiring, "the first key replaces none")
	before := time.Now()
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "passkeys", "rotate", "--data", dir, "--org", seed.OrganisationID, "--mode", "test",
		"--grace", "48h", "--json")), &second))
	require.Len(t, second.Retiring, 1)
	require.Equal(t, first.New.ID, second.Retiring[0].ID)
	require.WithinDuration(t, before.Add(48*time.Hour), *second.Retiring[0].RetiresAt, 5*time.Second, "no visits: the grace alone")

	store, err := openData(t, dir)
	require.NoError(t, err)
	defer store.Close()
	keys, err := store.PassKeys(context.Background(), cloud.Tenant{OrgID: seed.OrganisationID, Mode: cloud.ModeTest})
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, second.New.ID, keys[0].ID)
	require.Nil(t, keys[0].RetiredAt, "the new key signs")
	live, err := store.PassKeys(context.Background(), cloud.Tenant{OrgID: seed.OrganisationID, Mode: cloud.ModeLive})
	require.NoError(t, err)
	require.Empty(t, live, "the other mode is untouched")

	var buf bytes.Buffer
	err = run(context.Background(), []string{"passkeys", "rotate", "--data", dir, "--org", "org_01h2xcejqtf2nbrexx3vqjhp41", "--mode", "test"}, &buf, os.Stderr)
	require.ErrorIs(t, err, cloud.ErrNotFound)
	var ue usageError
	require.ErrorAs(t, run(context.Background(), []string{"passkeys", "rotate", "--data", dir, "--org", seed.OrganisationID, "--mode", "prod"}, &buf, os.Stderr), &ue)
}

// TestKEK_Rotate: the command puts a new KEK in the file, every secret
// moves under it, and the old one is gone from the file.
func TestKEK_Rotate(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	runCLI(t, "passkeys", "rotate", "--data", dir, "--org", seed.OrganisationID, "--mode", "live")
	old, err := kek.ReadFile(filepath.Join(dir, "kek"))
	require.NoError(t, err)
	require.Len(t, old, 1)

	out := runCLI(t, "kek", "rotate", "--data", dir)
	keys, err := kek.ReadFile(filepath.Join(dir, "kek"))
	require.NoError(t, err)
	require.Len(t, keys, 1, "the old key is dropped")
	require.NotEqual(t, old[0], keys[0])
	require.Contains(t, out, kek.ID(keys[0])+" replaces "+kek.ID(old[0]))
	fi, err := os.Stat(filepath.Join(dir, "kek"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	store, err := openData(t, dir) // the new key alone opens everything
	require.NoError(t, err)
	defer store.Close()
	pk, err := store.PassKeys(context.Background(), cloud.Tenant{OrgID: seed.OrganisationID, Mode: cloud.ModeLive})
	require.NoError(t, err)
	require.Len(t, pk, 1)
	require.Zero(t, store.Resealed(), "everything was under the new key already")
}
