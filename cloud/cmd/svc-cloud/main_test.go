package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// TestMain lets the test binary act as svc-cloud itself, for tests that
// run it as a child process.
func TestMain(m *testing.M) {
	if os.Getenv("SVC_CLOUD_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type seedOutput struct {
	OrganisationID string         `json:"organisation_id"`
	Plan           string         `json:"plan"`
	Keys           cloud.SeedKeys `json:"keys"`
	Live           cloud.SeedMode `json:"live"`
	Test           cloud.SeedMode `json:"test"`
}

// openData opens the SQLite store svc-cloud keeps in dir, with the
// key-encryption key it made there.
func openData(t testing.TB, dir string) (*sqlite.Store, error) {
	t.Helper()
	keys, err := kek.LoadFile(filepath.Join(dir, "kek"))
	require.NoError(t, err)
	return sqlite.Open(context.Background(), filepath.Join(dir, "cloud.db"), keys)
}

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), args, &out, os.Stderr), "svc-cloud %s", strings.Join(args, " "))
	return out.String()
}

func TestSeed_JSONShape(t *testing.T) {
	dir := t.TempDir()
	var first, second seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--plan", "growth", "--json")), &first))
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &second))
	require.NotEqual(t, first.OrganisationID, second.OrganisationID, "each call makes a new organisation")
	require.True(t, ids.Valid(ids.Organisation, first.OrganisationID))
	require.Equal(t, "growth", first.Plan)
	require.Equal(t, "pro", second.Plan)
	require.True(t, strings.HasPrefix(first.Keys.SecretLive, "svc_sk_live_"))
	require.True(t, strings.HasPrefix(first.Keys.SecretTest, "svc_sk_test_"))
	require.True(t, strings.HasPrefix(first.Keys.PublishableLive, "svc_pk_live_"))
	require.True(t, strings.HasPrefix(first.Keys.PublishableTest, "svc_pk_test_"))

	store, err := openData(t, dir)
	require.NoError(t, err)
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	for _, m := range []struct {
		mode cloud.Mode
		out  cloud.SeedMode
		key  string
	}{{cloud.ModeLive, first.Live, first.Keys.SecretLive}, {cloud.ModeTest, first.Test, first.Keys.SecretTest}} {
		p, err := svc.Authenticate(context.Background(), m.key)
		require.NoError(t, err)
		require.Len(t, p.Key.Scopes, len(cloud.Scopes), "secret keys carry every scope")
		tn := cloud.Tenant{OrgID: first.OrganisationID, Mode: m.mode}
		require.GreaterOrEqual(t, len(m.out.Sites), 2)
		zones, gates := map[string]bool{}, 0
		for _, s := range m.out.Sites {
			zones[s.Timezone] = true
			gates += len(s.Gates)
			site, err := store.Site(context.Background(), tn, s.ID)
			require.NoError(t, err, "site %s is in %s mode", s.ID, m.mode)
			require.Equal(t, s.Timezone, site.Timezone)
		}
		require.GreaterOrEqual(t, len(zones), 2, "sites in different time zones")
		require.GreaterOrEqual(t, gates, 3)
		require.GreaterOrEqual(t, len(m.out.People), 30)
		people, err := store.People(context.Background(), tn, m.out.People)
		require.NoError(t, err)
		inactive := 0
		for _, p := range people {
			if !p.Active {
				inactive++
			}
		}
		require.Len(t, people, len(m.out.People))
		require.Positive(t, inactive)
		require.GreaterOrEqual(t, len(m.out.Teams), 12)
		var archived, closed, everySite int
		names := map[string]int{}
		for _, id := range m.out.Teams {
			tm, err := store.Team(context.Background(), tn, id)
			require.NoError(t, err)
			if tm.Archived {
				archived++
			}
			if !tm.VisitorsCanChoose {
				closed++
			}
			if tm.SiteID == "" {
				everySite++
			}
			for _, word := range strings.Fields(tm.Name) {
				names[word]++
			}
		}
		require.Positive(t, archived)
		require.Positive(t, closed)
		require.Positive(t, everySite)
		require.GreaterOrEqual(t, names["Support"], 2, "names share substrings")
	}
	require.NotEqual(t, first.Live.Teams[0], first.Test.Teams[0], "different IDs in each mode")
}

func TestKeys_CreateAndRevoke(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	var created struct{ ID, Key string }
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "keys", "create", "--data", dir, "--org", seed.OrganisationID,
		"--mode", "test", "--kind", "secret", "--scopes", "people:read,sites:read", "--json")), &created))
	require.True(t, ids.Valid(ids.Key, created.ID))

	store, err := openData(t, dir)
	require.NoError(t, err)
	svc := cloud.NewService(store, time.Now)
	p, err := svc.Authenticate(context.Background(), created.Key)
	require.NoError(t, err)
	require.ElementsMatch(t, []cloud.Scope{cloud.ScopePeopleRead, cloud.ScopeSitesRead}, p.Key.Scopes)
	store.Close()

	runCLI(t, "keys", "revoke", "--data", dir, "--org", seed.OrganisationID, "--key-id", created.ID)
	store, err = openData(t, dir)
	require.NoError(t, err)
	defer store.Close()
	_, err = cloud.NewService(store, time.Now).Authenticate(context.Background(), created.Key)
	require.ErrorIs(t, err, cloud.ErrUnauthorized)

	var out bytes.Buffer
	err = run(context.Background(), []string{"keys", "revoke", "--data", dir, "--org", seed.OrganisationID, "--key-id", ids.New(ids.Key)}, &out, os.Stderr)
	require.ErrorContains(t, err, "has no key")
}

func TestCLI_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{},
		{"frobnicate"},
		{"seed", "--data", dir, "--plan", "platinum"},
		{"keys", "create", "--data", dir, "--org", "org_x", "--mode", "staging"},
		{"keys", "create", "--data", dir, "--org", "org_x", "--mode", "test", "--scopes", "teams:delete"},
		{"keys", "revoke", "--data", dir},
		{"serve", "--data", dir, "--rate-limits", "pro=fast"},
		{"serve", "--data", dir, "--pass-rate-limits", "link=0"},
		{"serve", "--data", dir, "--pass-rate-limits", "visit=5"},
		{"serve", "--data", dir, "--trusted-proxies", "10.0.0.0/8,proxy.example"},
		{"serve", "--data", dir, "--read-timeout", "0s"},
		{"serve", "--data", dir, "--max-conns-per-address", "-1"},
		{"serve", "--data", dir, "--drain-delay", "-1s"},
		{"serve", "--data", dir, "--shutdown-timeout", "0s"},
		{"serve", "--data", dir, "--maintain-every", "0s"},
		{"serve", "--data", dir, "--webhook-lease", "30s"},
		{"serve", "--data", dir, "--database-max-conns", "-2"},
		{"serve", "--data", dir, "--instance-id", "two words"},
		{"serve", "--data", dir, "--mqtt-share-group", "a/b"},
		{"serve", "--data", dir, "--mqtt-share-group", "g", "--mqtt-filters", "$share/g/svc/v1/+/+/sites/+/edges/+/facts"},
		{"serve", "--data", dir, "--mqtt-filters", "svc/v1/#"},
		{"serve", "--data", dir, "--log-level", "loud"},
		{"serve", "--data", dir, "--log-format", "xml"},
		{"serve", "--data", dir, "--metrics-listen", "8090"},
		{"serve", "--data", dir, "--metrics-listen", "", "--pprof"},
		{"seed", "--data", dir, "--log-format", "logfmt"},
		{"serve", "--database-url", "mysql://x"},
		{"serve", "--data", dir, "--mqtt-listen", "0.0.0.0:1884"},
		{"serve", "--data", dir, "--mqtt-listen", ":1884"},
		{"serve", "--data", dir, "--mqtt-listen", "192.0.2.10:1884"},
		{"serve", "--data", dir, "--mqtt-listen", "", "--mqtt-tls-listen", ""},
		{"serve", "--data", dir, "--mqtt-tls-cert", "broker.crt"},
		{"serve", "--data", dir, "--mqtt-edge-url", "cloud.example.com:8884"},
		{"serve", "--data", dir, "--mqtt-edge-url", "tcp://cloud.example.com:1884"},
		{"serve", "--data", dir, "--mqtt-url", "off", "--mqtt-edge-url", "ssl://cloud.example.com:8884"},
		{"serve", "--data", dir, "--mqtt-url", "tcp://mqtt.example.com:1883"},
		{"serve", "--data", dir, "--mqtt-url", "tcp://127.0.0.1:1883", "--mqtt-username", "c", "--mqtt-password", "p", "--mqtt-dynsec-username", "admin"},
		{"serve", "--data", dir, "--mqtt-dynsec-username", "admin", "--mqtt-dynsec-password", "p"},
		{"serve", "--data", dir, "--mqtt-url", "tcp://127.0.0.1:1883", "--mqtt-dynsec-username", "admin", "--mqtt-dynsec-password", "p"},
		{"serve", "--data", dir, "--mqtt-url", "tcp://127.0.0.1:1883", "--mqtt-username", "admin", "--mqtt-password", "p",
			"--mqtt-dynsec-username", "admin", "--mqtt-dynsec-password", "p"},
		{"serve", "--data", dir, "--mqtt-url", "tcp://127.0.0.1:1883", "--mqtt-username", "c", "--mqtt-password", "p",
			"--mqtt-dynsec-username", "admin", "--mqtt-dynsec-password", "p", "--mqtt-dynsec-every", "0s"},
		{"edges", "revoke", "--data", dir, "--org", "org_x", "--mode", "test", "--edge-id", ids.New(ids.Edge),
			"--mqtt-url", "off", "--mqtt-dynsec-username", "admin", "--mqtt-dynsec-password", "p"},
		{"seed", "extra"},
	}
	// A case that is not refused must not serve until the test times
	// out: its context has ended already.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range cases {
		var out bytes.Buffer
		err := run(ended, args, &out, os.Stderr)
		var ue usageError
		require.ErrorAs(t, err, &ue, "svc-cloud %v", args)
	}
}

// TestServe_StopsCleanlyOnSIGTERM runs svc-cloud serve as a child
// process, waits for it to answer, sends SIGTERM and expects exit code 0.
func TestServe_StopsCleanlyOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--data", dir, "--addr", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--mqtt-tls-listen", "127.0.0.1:0",
		"--metrics-listen", "127.0.0.1:0", "--demo", "--drain-delay", "0s")
	cmd.Env = append(os.Environ(), "SVC_CLOUD_AS_MAIN=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	sc := bufio.NewScanner(stdout)
	var base string
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "svc-cloud is serving "); ok {
			base = rest
			break
		}
	}
	require.NotEmpty(t, base, "serve printed its URL")
	go func() { // keep draining stdout
		for sc.Scan() {
		}
	}()
	resp, err := httpGet(base + "/openapi.json")
	require.NoError(t, err)
	require.Equal(t, 200, resp)

	var keys cloud.SeedKeys
	raw, err := os.ReadFile(filepath.Join(dir, "demo.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &keys))
	require.True(t, strings.HasPrefix(keys.SecretTest, "svc_sk_test_"))

	// The demo edge is enrolled by code, not by a file serve writes.
	_, err = os.Stat(filepath.Join(dir, "edge.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "exit status after SIGTERM")
}

// TestEdges_Create makes an edge for a seeded site: its credentials
// authenticate, and the configuration printed is one the appliance loads.
func TestEdges_Create(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	site := seed.Test.Sites[0]
	var created struct {
		ID       string          `json:"id"`
		Username string          `json:"username"`
		Password string          `json:"password"`
		Config   json.RawMessage `json:"config"`
	}
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "edges", "create", "--data", dir, "--org", seed.OrganisationID,
		"--mode", "test", "--site", site.ID, "--name", "Reception", "--broker", "ssl://mqtt.example.com:8883", "--json")), &created))
	require.True(t, ids.Valid(ids.Edge, created.ID))
	require.Equal(t, created.ID, created.Username)

	cfg, err := config.Parse(created.Config, config.Options{})
	require.NoError(t, err, "the appliance loads the configuration:\n%s", created.Config)
	require.Equal(t, protocol.Site{Mode: "test", OrgID: seed.OrganisationID, SiteID: site.ID}, cfg.Site)
	require.Equal(t, created.ID, cfg.EdgeID)
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
	require.NoError(t, err, "the embedded broker's CA, made for the configuration")
	require.Equal(t, config.Broker{URL: "ssl://mqtt.example.com:8883", Username: created.Username, Password: created.Password, CA: ca}, cfg.Broker)
	require.Len(t, cfg.Gates, len(site.Gates))
	for i, g := range cfg.Gates {
		require.Equal(t, site.Gates[i], g.ID, "the site's gates, oldest first")
		require.Equal(t, []config.Reader{{Kind: config.TCP, Listen: fmt.Sprintf("127.0.0.1:%d", 9001+i)}}, g.Readers,
			"readers listen on loopback unless the installer opens them")
		require.Equal(t, fmt.Sprintf("SIM%d", 17+i), g.Relay.Pin)
		require.Equal(t, config.FailSecure, g.WhenStale)
	}
	require.Contains(t, string(created.Config), "To take passes from a reader on the LAN", "the file says how to open a reader to the LAN")
	require.Equal(t, &config.Kiosk{Listen: config.DefaultKioskListen, Languages: []string{"en", "fr"}, Label: "62x100"}, cfg.Kiosk)
	require.Equal(t, config.DefaultDataDir, cfg.DataDir, "the appliance's own default")

	store, err := openData(t, dir)
	require.NoError(t, err)
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	e, err := svc.AuthenticateEdge(context.Background(), created.Username, created.Password)
	require.NoError(t, err)
	require.Equal(t, "Reception", e.Name)
	require.Equal(t, cloud.Tenant{OrgID: seed.OrganisationID, Mode: cloud.ModeTest}, e.Tenant)
	require.Equal(t, site.ID, e.SiteID)
}

func TestEdges_CreateHumanOutput(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	site := seed.Live.Sites[1]
	out := runCLI(t, "edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", site.ID)
	lines := strings.Split(out, "\n")
	require.Regexp(t, `^edge edge_[0-9a-z]{26} \(Edge\) at site `+site.ID+`, live mode$`, lines[0])
	require.Regexp(t, `^broker username: edge_[0-9a-z]{26}$`, lines[1])
	require.Regexp(t, `^broker password: svc_edge_[0-9A-Za-z]{32} \(shown once\)$`, lines[2])
	start := strings.Index(out, "{")
	require.Positive(t, start)
	cfg, err := config.Parse([]byte(out[start:]), config.Options{})
	require.NoError(t, err)
	require.Equal(t, "ssl://"+DefaultMQTTTLSListen, cfg.Broker.URL, "the default broker: the embedded one over TLS")
	require.NotEmpty(t, cfg.Broker.CA, "with its CA")
	require.Equal(t, strings.TrimPrefix(lines[1], "broker username: "), cfg.Broker.Username)
}

func TestEdges_CreateErrors(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "live", "--site", seed.Test.Sites[0].ID}, "has no live-mode site"},
		{[]string{"--mode", "live", "--site", ids.New(ids.Site)}, "has no live-mode site"},
	} {
		var out bytes.Buffer
		args := append([]string{"edges", "create", "--data", dir, "--org", seed.OrganisationID}, c.args...)
		err := run(context.Background(), args, &out, os.Stderr)
		require.ErrorContains(t, err, c.want)
		var ue usageError
		require.False(t, errors.As(err, &ue), "not a usage error")
	}
	for _, args := range [][]string{
		{"edges", "create", "--data", dir, "--mode", "live", "--site", seed.Live.Sites[0].ID},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "staging", "--site", seed.Live.Sites[0].ID},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live"},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", seed.Live.Sites[0].ID, "--broker", "http://x"},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", seed.Live.Sites[0].ID, "--broker", "tcp://u:p@x:1883"},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", seed.Live.Sites[0].ID, "--broker", "tcp://192.0.2.10:1884"},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", seed.Live.Sites[0].ID, "--broker", "ssl://mqtt.example.com"},
		{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--site", seed.Live.Sites[0].ID, "--broker", "tcp://127.0.0.1:1884", "--broker-ca", "system"},
		{"edges"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, os.Stderr)
		var ue usageError
		require.ErrorAs(t, err, &ue, "svc-cloud %v", args)
	}
}

// TestEdges_List shows each edge with what the cloud knows of it; an edge
// never heard from is offline and never seen.
func TestEdges_List(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	site := seed.Test.Sites[0]
	var created struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "edges", "create", "--data", dir, "--org", seed.OrganisationID,
		"--mode", "test", "--site", site.ID, "--name", "Reception", "--json")), &created))

	var rows []edgeRow
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "test", "--json")), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, created.ID, rows[0].ID)
	require.Equal(t, site.ID, rows[0].SiteID)
	require.Equal(t, "Reception", rows[0].Name)
	require.Equal(t, cloud.EdgeOffline, rows[0].State)
	require.Nil(t, rows[0].LastSeenAt)

	out := runCLI(t, "edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "test", "--site", site.ID)
	require.Regexp(t, `(?m)^EDGE +SITE +NAME +STATE +LAST SEEN +SEQ +OUTBOX$`, out)
	require.Regexp(t, `(?m)^`+created.ID+` +`+site.ID+` +Reception +offline +never +0 +0$`, out)

	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "live", "--json")), &rows))
	require.Empty(t, rows, "the live mode has none")
	for _, args := range [][]string{
		{"edges", "list", "--data", dir, "--mode", "test"},
		{"edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "staging"},
		{"edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "test", "--site", "x"},
	} {
		var ue usageError
		require.ErrorAs(t, run(context.Background(), args, io.Discard, os.Stderr), &ue, "svc-cloud %v", args)
	}
}

// A site has one appliance: a second edges create is refused and says how
// to replace the first; edges revoke frees the site, and edges list shows
// the revoked edge as such.
func TestEdges_OnePerSiteAndRevoke(t *testing.T) {
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	site := seed.Test.Sites[0]
	create := func() (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), []string{"edges", "create", "--data", dir, "--org", seed.OrganisationID, "--mode", "test",
			"--site", site.ID, "--json"}, &out, os.Stderr)
		var created struct {
			ID string `json:"id"`
		}
		if err == nil {
			require.NoError(t, json.Unmarshal(out.Bytes(), &created))
		}
		return created.ID, err
	}
	first, err := create()
	require.NoError(t, err)
	_, err = create()
	require.ErrorContains(t, err, "already has edge "+first)
	require.ErrorContains(t, err, "svc-cloud edges revoke --org "+seed.OrganisationID+" --mode test --edge-id "+first)

	out := runCLI(t, "edges", "revoke", "--data", dir, "--org", seed.OrganisationID, "--mode", "test", "--edge-id", first)
	require.Contains(t, out, "revoked "+first)
	second, err := create()
	require.NoError(t, err, "the site takes a new appliance once the old one is revoked")

	var rows []struct {
		ID        string     `json:"id"`
		RevokedAt *time.Time `json:"revoked_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "test",
		"--site", site.ID, "--json")), &rows))
	require.Len(t, rows, 2)
	require.Equal(t, first, rows[0].ID)
	require.NotNil(t, rows[0].RevokedAt)
	require.Equal(t, second, rows[1].ID)
	require.Nil(t, rows[1].RevokedAt)
	require.Contains(t, runCLI(t, "edges", "list", "--data", dir, "--org", seed.OrganisationID, "--mode", "test"), "revoked")

	err = run(context.Background(), []string{"edges", "revoke", "--data", dir, "--org", seed.OrganisationID, "--mode", "live",
		"--edge-id", second}, &bytes.Buffer{}, os.Stderr)
	require.ErrorContains(t, err, "has no live-mode edge")
}
