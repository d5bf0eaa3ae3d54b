package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/edge/update"
	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/shared/release"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
)

// builds are the svc-edge binaries of the update tests, each trusting the
// test's release key: the installed 1.0.0, a good 2.0.0, and two bad
// ones built with the svcfault tag.
type builds struct {
	dir     string
	pub     ed25519.PublicKey
	priv    ed25519.PrivateKey
	paths   map[string]string // version → binary
	bundles map[string][]byte
}

func buildReleases(t *testing.T) *builds {
	t.Helper()
	if testing.Short() {
		t.Skip("builds svc-edge four times")
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	b := &builds{dir: t.TempDir(), pub: pub, priv: priv, paths: map[string]string{}, bundles: map[string][]byte{}}
	for version, fault := range map[string]string{"1.0.0": "", "2.0.0": "", "2.0.1-crash": "crash", "2.0.2-unhealthy": "unhealthy"} {
		path := filepath.Join(b.dir, version, "svc-edge")
		ldflags := fmt.Sprintf("-X main.version=%s -X main.fault=%s -X github.com/svc-vms/svc/shared/release.TrustedKeys=%s",
			version, fault, release.PublicKeyString(pub))
		cmd := exec.Command("go", "build", "-tags", "svcfault", "-ldflags", ldflags, "-o", path, ".")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", version, out)
		b.paths[version] = path
		b.bundles[version], err = os.ReadFile(path)
		require.NoError(t, err)
	}
	return b
}

// signed is the release of version, signed with the trusted key.
func (b *builds) signed(t *testing.T, version string) release.Envelope {
	t.Helper()
	m, err := release.Describe(bytes.NewReader(b.bundles[version]), version, "amd64", "", release.KindBinary, time.Now())
	require.NoError(t, err)
	m.Arch, m.ARM = runtime.GOARCH, goarm()
	env, err := release.Sign(m, b.priv)
	require.NoError(t, err)
	return env
}

// cloudStub is the cloud's update endpoints as the appliance sees them:
// the poll and the bundle, both checking the identity key's signature.
type cloudStub struct {
	identity ed25519.PublicKey

	mu      sync.Mutex
	offer   *release.Envelope
	bundle  []byte
	cutOnce bool // the next download stops half way
	results []update.Result
	resumed bool // a download asked for a Range
}

func (c *cloudStub) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	auth := func(r *http.Request) ([]byte, bool) {
		s, err := edgeauth.Verify(r, time.Now())
		return s.Body, err == nil && s.Key.Equal(c.identity)
	}
	mux.HandleFunc("POST "+update.PollPath, func(w http.ResponseWriter, r *http.Request) {
		body, ok := auth(r)
		if !ok {
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		var p update.Poll
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if p.Result != nil {
			c.results = append(c.results, *p.Result)
		}
		resp := update.PollResponse{Release: c.offer}
		if c.offer != nil {
			resp.URL = "/v1/edge/releases/bundle"
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("GET /v1/edge/releases/bundle", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := auth(r); !ok {
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		c.mu.Lock()
		bundle, cut := c.bundle, c.cutOnce
		c.cutOnce = false
		if r.Header.Get("Range") != "" {
			c.resumed = true
		}
		c.mu.Unlock()
		if cut {
			w.Header().Set("Content-Length", fmt.Sprint(len(bundle)))
			_, _ = w.Write(bundle[:len(bundle)/2])
			panic(http.ErrAbortHandler) // the connection drops half way
		}
		http.ServeContent(w, r, "svc-edge", time.Time{}, bytes.NewReader(bundle))
	})
	return mux
}

func (c *cloudStub) publish(env release.Envelope, bundle []byte, cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offer, c.bundle, c.cutOnce = &env, bundle, cut
}

func (c *cloudStub) lastResult() (update.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.results) == 0 {
		return update.Result{}, false
	}
	return c.results[len(c.results)-1], true
}

// appliance is `svc-edge supervise` of the installed 1.0.0, as a child
// process, with a broker, a cache the cloud filled, and a stub cloud.
type appliance struct {
	addr, gate, cachePath, slots, faultWait string
	token                                   string
	cloud                                   *cloudStub
	cmd                                     *exec.Cmd
	out                                     *lockedbuf.Buffer
	exited                                  chan struct{}
}

// startAppliance starts the appliance on a stub cloud.
func startAppliance(t *testing.T, b *builds) *appliance {
	t.Helper()
	_, identity, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	stub := &cloudStub{identity: identity.Public().(ed25519.PublicKey)}
	srv := httptest.NewServer(stub.handler(t))
	t.Cleanup(srv.Close)
	a := startApplianceOn(t, b, srv.URL, identity)
	a.cloud = stub
	return a
}

// startApplianceOn starts the appliance with identity key identity, on
// the cloud at url.
func startApplianceOn(t *testing.T, b *builds, url string, identity ed25519.PrivateKey) *appliance {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	brk, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Logger: sitetest.Logger(t, "broker"),
		Auth: broker.AuthenticatorFunc(func(context.Context, string, string) (broker.Access, error) { return broker.Access{Cloud: true}, nil })})
	require.NoError(t, err)
	go func() { _ = brk.Run(ctx) }()

	keyFile := filepath.Join(dir, "identity.key")
	writeIdentity(t, keyFile, identity)
	a := &appliance{addr: freeport.Addr(t), gate: ids.New(ids.Gate), cachePath: filepath.Join(dir, "data", "cache.db"),
		slots: filepath.Join(dir, "slots"), faultWait: filepath.Join(dir, "fail-now"), out: &lockedbuf.Buffer{}, exited: make(chan struct{})}

	siteID, edgeID := ids.New(ids.Site), ids.New(ids.Edge)
	cfg := fmt.Sprintf(`{
  "site": {"mode": "test", "org_id": %q, "site_id": %q},
  "edge_id": %q,
  "broker": {"url": "tcp://%s", "username": "edge", "password": "secret"},
  "data_dir": "data",
  "listen": %q,
  "gates": [{"gate_id": %q, "readers": [{"kind": "tcp", "listen": %q}], "relay": {"pin": "GPIO17", "pulse": "1ms"}}]
}`, ids.New(ids.Organisation), siteID, edgeID, brk.Addr(), a.addr, a.gate, freeport.Addr(t))
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))

	key, err := passtoken.NewKey(nil)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(a.cachePath), 0o700))
	c, err := cache.Open(a.cachePath, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	now := time.Now().UTC()
	vid := ids.New(ids.Visit)
	at, until := now.Add(-time.Hour), now.Add(24*time.Hour)
	visit := protocol.Visit{ID: vid, Status: "expected", ForVisitID: vid, ExpectedAt: &at, ExpectedUntil: &until,
		Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: "Vera Visitor"}
	pub := key.Public()
	require.NoError(t, c.ReplaceSnapshot([]protocol.Snapshot{{Seq: 3, Part: 1, Parts: 1,
		Settings: &protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 600},
		Gates:    []protocol.Gate{{ID: a.gate, Name: "Front turnstile", Direction: "entry"}},
		Keys:     []protocol.Key{{ID: pub.ID, Public: pub.Key}}, Visits: []protocol.Visit{visit}}}))
	require.NoError(t, c.MarkSynced(now))
	require.NoError(t, c.Close())
	a.token, err = passtoken.Sign(key, passtoken.Claims{VisitID: vid, SiteID: siteID, IssuedAt: at, NotBefore: at, NotAfter: until})
	require.NoError(t, err)

	a.cmd = exec.Command(b.paths["1.0.0"], "supervise", "--slots", a.slots, "--trial-timeout", "60s", "--stop-grace", "10s", "--",
		"run", "--config", path, "--simulate", "--cloud", url, "--identity", keyFile, "--update-every", "100ms")
	a.cmd.Env = append(os.Environ(), "SVC_EDGE_FAULT_WAIT="+a.faultWait)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	require.NoError(t, a.cmd.Start())
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	t.Cleanup(func() { a.stop(t) })
	sitetest.Eventually(t, 30*time.Second, func() bool { return a.status(t) != nil }, "the appliance did not serve:\n%s", a.out)
	return a
}

func (a *appliance) stop(t *testing.T) {
	t.Helper()
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		t.Errorf("the supervisor did not stop:\n%s", a.out)
	}
	if t.Failed() {
		t.Logf("appliance output:\n%s", a.out)
	}
}

// status is the daemon's update state, nil while nothing answers.
func (a *appliance) status(t *testing.T) *edge.UpdateStatus {
	t.Helper()
	resp, err := http.Get("http://" + a.addr + "/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st edge.StatusResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return st.Update
}

// metrics is the daemon's GET /metrics.
func (a *appliance) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + a.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// scan scans the visitor's pass at the gate through the loopback API:
// the decision's fact, or ok false when no daemon answered (a restart).
func (a *appliance) scan(t *testing.T) (resp edge.ScanResponse, ok bool) {
	t.Helper()
	r, err := http.Post("http://"+a.addr+"/gates/"+a.gate+"/scan", "text/plain", strings.NewReader(a.token))
	if err != nil {
		return resp, false
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	require.Equal(t, http.StatusOK, r.StatusCode, "every answer is a decision: %s", body)
	require.NoError(t, json.Unmarshal(body, &resp))
	return resp, true
}

// scanner scans every few milliseconds until stopped, and returns the
// facts the decisions recorded.
func (a *appliance) scanner(t *testing.T) (stop func() []string) {
	done := make(chan struct{})
	var facts []string
	var wg sync.WaitGroup
	var answered atomic.Int64
	var gap time.Duration // the longest time between two answered scans: the restart
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := time.Now()
		tick := time.NewTicker(20 * time.Millisecond) // the pace of visitors
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if r, ok := a.scan(t); ok {
				answered.Add(1)
				gap, last = max(gap, time.Since(last)), time.Now()
				if r.FactID != "" {
					facts = append(facts, r.FactID)
				}
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		require.Positive(t, answered.Load(), "the gate decided during the update")
		t.Logf("%d scans answered; the longest pause between answers (the restart): %s", answered.Load(), gap)
		return facts
	}
}

// outbox is every fact in the stopped appliance's cache.
func (a *appliance) outbox(t *testing.T) map[string]bool {
	t.Helper()
	c, err := cache.Open(a.cachePath, cache.Options{})
	require.NoError(t, err)
	defer c.Close()
	facts, err := c.Outbox(100000)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range facts {
		out[f.ID] = true
	}
	return out
}

// writeIdentity writes the appliance's identity key as the daemon reads
// it: PKCS #8 PEM, mode 0600.
func writeIdentity(t *testing.T, path string, priv ed25519.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
}

// TestUpdate runs each path of an update through real processes: the
// supervisor and the daemons it starts, built from this package.
func TestUpdate(t *testing.T) {
	b := buildReleases(t)

	t.Run("good release commits after a resumed download", func(t *testing.T) {
		a := startAppliance(t, b)
		require.Equal(t, "1.0.0", a.status(t).Version)
		stop := a.scanner(t)
		a.cloud.publish(b.signed(t, "2.0.0"), b.bundles["2.0.0"], true)
		sitetest.Eventually(t, 60*time.Second, func() bool {
			st := a.status(t)
			return st != nil && st.Version == "2.0.0" && st.Last != nil
		}, "2.0.0 did not commit:\n%s", a.out)
		st := a.status(t)
		require.Equal(t, "b", st.Slot)
		require.Equal(t, update.Committed, st.Last.Outcome)
		code, out, errOut := runCLI(t, "status", "--addr", a.addr)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "  version      2.0.0 (slot b)\n")
		require.Contains(t, out, "  last update  committed 2.0.0 ")
		require.Contains(t, a.metrics(t), "svc_edge_update_last_failed 0\n")
		sitetest.Eventually(t, 10*time.Second, func() bool {
			r, ok := a.cloud.lastResult()
			return ok && r.Outcome == update.Committed && r.Version == "2.0.0"
		}, "the cloud did not hear of the commit")
		require.True(t, a.cloud.resumed, "the cut download resumed with a Range request")
		facts := stop()
		_, ok := a.scan(t)
		require.True(t, ok, "2.0.0 decides")
		a.stop(t)
		kept := a.outbox(t)
		for _, f := range facts {
			require.True(t, kept[f], "fact %s kept", f)
		}
	})

	failed := func(t *testing.T, a *appliance, outcome, reason string) {
		t.Helper()
		sitetest.Eventually(t, 60*time.Second, func() bool {
			r, ok := a.cloud.lastResult()
			return ok && r.Outcome == outcome
		}, "the cloud did not hear of the failure:\n%s", a.out)
		r, _ := a.cloud.lastResult()
		require.Contains(t, r.Reason, reason)
		st := a.status(t)
		require.NotNil(t, st)
		require.Equal(t, "1.0.0", st.Version, "the old version runs")
		require.Equal(t, "a", st.Slot)
		require.Equal(t, outcome, st.Last.Outcome)
		require.Contains(t, st.Last.Reason, reason)
		_, ok := a.scan(t)
		require.True(t, ok, "1.0.0 decides")
	}

	// throughCloud enrols an appliance at a real cloud (the API over HTTP
	// on store), starts it at 1.0.0, and rolls version out to it.
	throughCloud := func(t *testing.T, store cloud.Store, version string) (*cloud.Service, cloud.Tenant, cloud.Edge, *appliance) {
		svc := cloud.NewService(store, time.Now)
		ctx := context.Background()
		seed, err := svc.Seed(ctx, "Acme", cloud.PlanPro)
		require.NoError(t, err)
		tn := cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}
		e, _, err := svc.CreateEdge(ctx, tn, seed.Test.Sites[0].ID, "Reception")
		require.NoError(t, err)
		_, identity, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		require.NoError(t, store.SetEdgeIdentityKey(ctx, e.ID, identity.Public().(ed25519.PublicKey)))
		api, err := httpapi.New(ctx, httpapi.Config{Service: svc, Logger: sitetest.Logger(t, "cloud")})
		require.NoError(t, err)
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)

		a := startApplianceOn(t, b, srv.URL, identity)
		_, err = svc.AddRelease(ctx, b.signed(t, version), b.pub, bytes.NewReader(b.bundles[version]))
		require.NoError(t, err)
		_, err = svc.CreateRollout(ctx, tn, cloud.RolloutInput{Version: version, EdgeIDs: []string{e.ID}, WindowStart: "00:00",
			WindowMinutes: 1440, FirstPercent: 100})
		require.NoError(t, err)
		return svc, tn, e, a
	}
	// updateEvents returns the edge's events of type typ, each with the
	// outcome and version of the update result its data shows.
	updateEvents := func(t *testing.T, store cloud.Store, tn cloud.Tenant, edgeID, typ string) [][2]string {
		t.Helper()
		evs, _, err := store.ListEvents(context.Background(), tn, cloud.EventFilter{Type: typ, ObjectID: edgeID}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		var out [][2]string
		for _, ev := range evs {
			var d struct {
				Update struct {
					LastResult struct {
						Outcome string `json:"outcome"`
						Version string `json:"version"`
					} `json:"last_result"`
				} `json:"update"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			out = append(out, [2]string{d.Update.LastResult.Outcome, d.Update.LastResult.Version})
		}
		return out
	}

	t.Run("through the cloud: a rollout commits on the appliance", func(t *testing.T) {
		stores.Each(t, func(t *testing.T, store cloud.Store) {
			_, tn, e, a := throughCloud(t, store, "2.0.0")
			var heard time.Time
			sitetest.Eventually(t, 60*time.Second, func() bool {
				list, err := store.EdgeUpdates(context.Background(), tn, "")
				if err == nil && len(list) == 1 && list[0].Version == "2.0.0" && list[0].LastOutcome == update.Committed {
					heard = list[0].PolledAt
					return true
				}
				return false
			}, "the cloud did not hear of the commit:\n%s", a.out)
			st := a.status(t)
			require.Equal(t, "2.0.0", st.Version)
			require.Equal(t, "b", st.Slot)
			// Polls go on (each may carry the result again until the
			// appliance knows the cloud has it): edge.updated fires once.
			sitetest.Eventually(t, 60*time.Second, func() bool {
				list, err := store.EdgeUpdates(context.Background(), tn, "")
				return err == nil && len(list) == 1 && list[0].PolledAt.After(heard)
			}, "the appliance did not poll again:\n%s", a.out)
			require.Equal(t, [][2]string{{update.Committed, "2.0.0"}}, updateEvents(t, store, tn, e.ID, cloud.EventEdgeUpdated))
			require.Empty(t, updateEvents(t, store, tn, e.ID, cloud.EventEdgeUpdateFailed))
		})
	})

	t.Run("through the cloud: a release that crashes rolls back, fires edge.update_failed and halts the rollout", func(t *testing.T) {
		stores.Each(t, func(t *testing.T, store cloud.Store) {
			svc, tn, e, a := throughCloud(t, store, "2.0.1-crash")
			sitetest.Eventually(t, 60*time.Second, func() bool {
				return len(updateEvents(t, store, tn, e.ID, cloud.EventEdgeUpdateFailed)) == 1
			}, "no edge.update_failed:\n%s", a.out)
			require.Equal(t, [][2]string{{update.RolledBack, "2.0.1-crash"}}, updateEvents(t, store, tn, e.ID, cloud.EventEdgeUpdateFailed))
			require.Empty(t, updateEvents(t, store, tn, e.ID, cloud.EventEdgeUpdated))
			st := a.status(t)
			require.Equal(t, "1.0.0", st.Version, "the old version runs")
			_, ok := a.scan(t)
			require.True(t, ok, "1.0.0 decides")
			rollouts, err := store.Rollouts(context.Background(), tn)
			require.NoError(t, err)
			require.Len(t, rollouts, 1)
			require.Equal(t, cloud.RolloutHalted, rollouts[0].State)
			got, err := svc.Edge(context.Background(), tn, e.ID)
			require.NoError(t, err)
			require.NotNil(t, got.Update)
			require.Equal(t, update.RolledBack, got.Update.LastOutcome)
		})
	})

	t.Run("bad signature is rejected before anything changes", func(t *testing.T) {
		a := startAppliance(t, b)
		env := b.signed(t, "2.0.0")
		sig := []byte(env.Signature)
		sig[3] ^= 1
		env.Signature = string(sig)
		a.cloud.publish(env, b.bundles["2.0.0"], false)
		failed(t, a, update.Rejected, "signature")
		_, err := os.Stat(filepath.Join(a.slots, "b", "staging"))
		require.True(t, os.IsNotExist(err), "nothing was downloaded")
	})

	t.Run("truncated download is rejected", func(t *testing.T) {
		a := startAppliance(t, b)
		full := b.bundles["2.0.0"]
		a.cloud.publish(b.signed(t, "2.0.0"), full[:len(full)-1000], false)
		failed(t, a, update.Rejected, "truncated")
	})

	t.Run("release that crashes at start rolls back", func(t *testing.T) {
		a := startAppliance(t, b)
		stop := a.scanner(t)
		a.cloud.publish(b.signed(t, "2.0.1-crash"), b.bundles["2.0.1-crash"], false)
		failed(t, a, update.RolledBack, "exited")
		r, _ := a.cloud.lastResult()
		require.Contains(t, r.Reason, "svcfault: this build crashes at start")
		stop()
	})

	t.Run("release that fails its health check rolls back and keeps its facts", func(t *testing.T) {
		a := startAppliance(t, b)
		a.cloud.publish(b.signed(t, "2.0.2-unhealthy"), b.bundles["2.0.2-unhealthy"], false)
		// The release on trial serves, and records a fact, before its
		// health check fails.
		sitetest.Eventually(t, 60*time.Second, func() bool {
			st := a.status(t)
			return st != nil && st.Version == "2.0.2-unhealthy"
		}, "the trial did not start:\n%s", a.out)
		r, ok := a.scan(t)
		require.True(t, ok)
		require.NotEmpty(t, r.FactID)
		require.NoError(t, os.WriteFile(a.faultWait, nil, 0o600))
		failed(t, a, update.RolledBack, "svcfault: this build fails its health check")
		code, out, errOut := runCLI(t, "status", "--addr", a.addr)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "update\n  version      1.0.0 (slot a)\n  state        idle\n")
		require.Contains(t, out, "  last update  rolled_back 2.0.2-unhealthy ")
		require.Contains(t, out, "(from 1.0.0): the health check failed: svcfault: this build fails its health check\n")
		metrics := a.metrics(t)
		require.Contains(t, metrics, `svc_edge_update_info{version="1.0.0",slot="a",state="idle"} 1`)
		require.Contains(t, metrics, "svc_edge_update_last_failed 1\n")
		a.stop(t)
		require.True(t, a.outbox(t)[r.FactID], "the trial's fact survives the rollback")
	})
}

// A download under way shows its progress, and updates that are off say
// why.
func TestPrintUpdate(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printUpdate(&out, edge.UpdateStatus{Version: "1.0.0", Slot: "a", Enabled: true, State: update.StateDownloading, Target: "2.0.0",
		Bytes: 5 << 20, Size: 20 << 20, Error: "update: download 2.0.0: stopped at 5242880 of 20971520 bytes (resumes)"}, now)
	require.Equal(t, "update\n  version   1.0.0 (slot a)\n  state     downloading 2.0.0: 5242880 of 20971520 bytes (25%)\n"+
		"  retrying  update: download 2.0.0: stopped at 5242880 of 20971520 bytes (resumes)\n", out.String())
	out.Reset()
	printUpdate(&out, edge.UpdateStatus{Version: "dev", Disabled: "not started by svc-edge supervise"}, now)
	require.Equal(t, "update\n  version  dev (slot -)\n  updates  off: not started by svc-edge supervise\n", out.String())
}
