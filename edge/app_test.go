package edge_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"
	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/promtest"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestApp_ScanOverTCPReader(t *testing.T) {
	s := newSite(t).start()
	addrs := s.app.Listening().Readers[s.entry]
	require.Len(t, addrs, 1)
	c, err := net.Dial("tcp", addrs[0].String())
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "%s\r\n", s.token(s.visits[0]))
	require.NoError(t, err)

	s.waitNotified() // recorded; the relay is commanded after the record
	eventually(t, func() bool { return s.pulses("GPIO17") == 1 }, "the entry gate's relay did not pulse")
	require.Zero(t, s.pulses("GPIO22"), "not the exit's")
	require.True(t, s.sync.ran.Load(), "the sync half runs")

	facts := s.outboxAfterStop()
	require.Len(t, facts, 1)
	require.Equal(t, protocol.FactCheckIn, facts[0].Kind)
	require.Equal(t, s.visits[0].ID, facts[0].VisitID)
	require.Equal(t, s.entry, facts[0].GateID)
	require.Equal(t, s.cfg.EdgeID, facts[0].EdgeID)
	require.True(t, t0.Equal(facts[0].At), "scan time from the App's clock")
}

func TestApp_ScanEndpoint(t *testing.T) {
	s := newSite(t).start()
	scan := func(gateID, body string) (int, edge.ScanResponse) {
		t.Helper()
		resp, text := s.post("/gates/"+gateID+"/scan", "text/plain", strings.NewReader(body))
		var out edge.ScanResponse
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusInternalServerError {
			require.NoError(t, json.Unmarshal([]byte(text), &out), text)
		}
		return resp.StatusCode, out
	}

	code, res := scan(s.entry, s.token(s.visits[1])+"\n")
	require.Equal(t, http.StatusOK, code)
	require.True(t, res.Admitted)
	require.Equal(t, "check_in", res.Kind)
	require.Equal(t, s.visits[1].ID, res.VisitID)
	require.NotEmpty(t, res.FactID)
	s.waitNotified()

	code, res = scan(s.entry, s.token(s.visits[1]))
	require.Equal(t, http.StatusOK, code, "a refusal is a decision, not an error")
	require.False(t, res.Admitted)
	require.Equal(t, "refused", res.Kind)
	require.Equal(t, protocol.ReasonAlreadyIn, res.Reason)

	code, res = scan(s.exit, s.token(s.visits[1]))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "check_out", res.Kind)

	code, res = scan(s.entry, "P1:NOT-A-TOKEN")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, protocol.ReasonInvalidToken, res.Reason)

	code, _ = scan(ids.New(ids.Gate), s.token(s.visits[1]))
	require.Equal(t, http.StatusNotFound, code)
	code, _ = scan(s.entry, " \r\n")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = scan(s.entry, strings.Repeat("A", 5000))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)

	require.Equal(t, 1, s.pulses("GPIO17"))
	require.Equal(t, 1, s.pulses("GPIO22"))
	require.Len(t, s.outboxAfterStop(), 4, "every decided scan is a fact")
}

func TestApp_CameraFrames(t *testing.T) {
	s := newSite(t).start()
	png, err := qrcode.Encode(s.token(s.visits[2]), qrcode.Medium, 400)
	require.NoError(t, err)
	resp, body := s.post("/gates/"+s.entry+"/frames", "image/png", bytes.NewReader(png))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	s.waitNotified()
	require.Equal(t, 1, s.pulses("GPIO17"))

	resp, body = s.post("/gates/"+s.exit+"/frames", "image/png", bytes.NewReader(png))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the exit gate has no camera: %s", body)

	facts := s.outboxAfterStop()
	require.Len(t, facts, 1)
	require.Equal(t, s.visits[2].ID, facts[0].VisitID)
}

func TestApp_Healthz(t *testing.T) {
	s := newSite(t).start()
	var h edge.HealthResponse
	resp, body := s.get("/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	require.Equal(t, edge.HealthResponse{Status: "ok"}, h)

	s.clock.set(t0.Add(61 * time.Minute)) // the offline limit is 60
	resp, body = s.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	require.Equal(t, "unavailable", h.Status)
	require.Contains(t, h.Reason, "over the offline limit of 1h0m0s")

	// While stale, the entry gate (fail secure) refuses; the exit (fail
	// open) still decides.
	resp, body = s.post("/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(s.token(s.visits[0])))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"reason":"stale_cache"`)
	resp, body = s.post("/gates/"+s.exit+"/scan", "text/plain", strings.NewReader(s.token(s.visits[0])))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"reason":"not_in"`)
}

func TestApp_HealthzNeverSynced(t *testing.T) {
	s := newSite(t, withoutSync()).start()
	resp, body := s.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "settings")
}

func TestApp_Metrics(t *testing.T) {
	s := newSite(t).start()
	samples, types := s.metrics()
	require.Equal(t, "histogram", types["svc_edge_decision_seconds"])
	require.Equal(t, "counter", types["svc_edge_scans_total"])
	require.Equal(t, "gauge", types["svc_edge_outbox_facts"])
	require.Equal(t, 3.0, samples["svc_edge_cache_visits"])
	require.Equal(t, 2.0, samples["svc_edge_cache_gates"])
	require.Equal(t, 1.0, samples["svc_edge_cache_keys"])
	require.Equal(t, 7.0, samples["svc_edge_cache_seq"])
	require.Equal(t, 0.0, samples["svc_edge_outbox_facts"])
	require.Equal(t, 0.0, samples["svc_edge_sync_age_seconds"])
	require.Equal(t, 0.0, samples["svc_edge_cache_stale"])

	for _, text := range []string{s.token(s.visits[0]), s.token(s.visits[0]), "garbage"} {
		resp, _ := s.post("/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(text))
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	s.clock.set(t0.Add(90 * time.Second))
	samples, _ = s.metrics()
	g := s.entry
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="check_in",reason=""}`, g)])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="refused",reason="already_in"}`, g)])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="refused",reason="invalid_token"}`, g)])
	require.Equal(t, 3.0, samples[fmt.Sprintf(`svc_edge_decision_seconds_count{gate_id=%q}`, g)])
	require.Equal(t, 3.0, samples[fmt.Sprintf(`svc_edge_decision_seconds_bucket{gate_id=%q,le="+Inf"}`, g)])
	require.Positive(t, samples[fmt.Sprintf(`svc_edge_decision_seconds_sum{gate_id=%q}`, g)])
	prev := 0.0
	for _, le := range []string{"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.01", "0.1", "+Inf"} {
		v, ok := samples[fmt.Sprintf(`svc_edge_decision_seconds_bucket{gate_id=%q,le=%q}`, g, le)]
		require.True(t, ok, "bucket %s", le)
		require.GreaterOrEqual(t, v, prev, "buckets are cumulative")
		prev = v
	}
	require.Equal(t, 3.0, samples["svc_edge_outbox_facts"])
	require.Equal(t, 90.0, samples["svc_edge_outbox_oldest_age_seconds"])
	require.Equal(t, 90.0, samples["svc_edge_sync_age_seconds"])
	require.Equal(t, 3.0, samples["svc_edge_cache_visits"], "a check-in changes a visit and adds none")
}

// TestApp_Metrics_ProcessRuntimeBuildAndSync: beside the gates' figures,
// /metrics has the sync half's connection and counters, the build, and
// the Go runtime's and the process's figures under the names the
// Prometheus client uses.
func TestApp_Metrics_ProcessRuntimeBuildAndSync(t *testing.T) {
	s := newSite(t)
	s.withDeps = func(d *edge.Deps) {
		d.Version = "1.4.2"
		d.Sync = func() edge.SyncMetrics {
			return edge.SyncMetrics{Connected: true, Connects: 2, ConnectErrors: 5, FactsPublished: 9, FactsAcked: 7, InFlight: 2}
		}
	}
	s.start()
	samples, types := s.metrics()
	require.Equal(t, 1.0, samples["svc_edge_broker_connected"])
	require.Equal(t, "counter", types["svc_edge_broker_connects_total"])
	require.Equal(t, 2.0, samples["svc_edge_broker_connects_total"])
	require.Equal(t, 5.0, samples["svc_edge_broker_connect_errors_total"])
	require.Equal(t, 9.0, samples["svc_edge_facts_published_total"])
	require.Equal(t, 7.0, samples["svc_edge_facts_acked_total"])
	require.Equal(t, 2.0, samples["svc_edge_facts_in_flight"])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_build_info{version="1.4.2",goversion=%q}`, runtime.Version())])
	require.Positive(t, samples["go_goroutines"])
	require.Positive(t, samples["go_memstats_heap_alloc_bytes"])
	require.Equal(t, "summary", types["go_gc_duration_seconds"])
	if runtime.GOOS == "linux" {
		require.Positive(t, samples["process_resident_memory_bytes"])
		require.Less(t, samples["process_resident_memory_bytes"], samples["process_virtual_memory_bytes"])
		require.Positive(t, samples["process_open_fds"])
		start := samples["process_start_time_seconds"]
		require.InDelta(t, float64(time.Now().Unix()), start, 600, "the process started minutes ago at most")
		require.Equal(t, "counter", types["process_cpu_seconds_total"])
	}

	// The whole exposition is what Prometheus's linter accepts.
	_, body := s.get("/metrics")
	promtest.CheckMetrics(t, []byte(body))

	// Without a sync half wired, its series are left out, not zero.
	bare := newSite(t).start()
	samples, _ = bare.metrics()
	_, ok := samples["svc_edge_broker_connected"]
	require.False(t, ok)
}

func TestApp_DoorSensor(t *testing.T) {
	s := newSite(t).start()
	door := fmt.Sprintf(`svc_edge_door_open{gate_id=%q}`, s.entry)
	samples, _ := s.metrics()
	require.Equal(t, 0.0, samples[door])
	s.pin("GPIO27").Set(gpio.High) // the door opens: the sensor reads high
	eventually(t, func() bool { samples, _ := s.metrics(); return samples[door] == 1 }, "the door's opening was not seen")
	var st edge.StatusResponse
	_, body := s.get("/status")
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.NotNil(t, st.Gates[0].DoorOpen)
	require.True(t, *st.Gates[0].DoorOpen)
	require.Nil(t, st.Gates[1].DoorOpen, "no sensor")
}

func TestApp_Status(t *testing.T) {
	s := newSite(t).start()
	resp, body := s.post("/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(s.token(s.visits[0])))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	s.clock.set(t0.Add(2 * time.Minute))

	resp, body = s.get("/status")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st edge.StatusResponse
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	require.Equal(t, s.cfg.EdgeID, st.EdgeID)
	require.Equal(t, edge.SiteStatus{Mode: "test", OrgID: s.cfg.Site.OrgID, SiteID: s.cfg.Site.SiteID}, st.Site)
	require.Equal(t, uint64(7), st.Seq)
	require.True(t, t0.Equal(*st.LastSync))
	require.Equal(t, 120.0, *st.SyncAgeSeconds)
	require.False(t, st.Stale)
	require.Equal(t, 1, st.Outbox.Depth)
	require.True(t, t0.Equal(*st.Outbox.Oldest))
	require.Equal(t, edge.CacheStatus{Visits: 3, Gates: 2, Keys: 1, People: 2}, st.Cache)
	require.Len(t, st.Gates, 2)
	require.Equal(t, edge.GateStatus{GateID: s.entry, Name: "Turnstile in", Direction: "entry", WhenStale: "fail_secure",
		Readers: []string{"tcp 127.0.0.1:0", "camera"}, DoorOpen: ptr(false)}, st.Gates[0])
	require.Equal(t, "fail_open", st.Gates[1].WhenStale)
	require.JSONEq(t, `{"connected":true,"broker":"tcp://broker.test:1883"}`, string(st.Broker))
}

func TestApp_StatusBeforeFirstSync(t *testing.T) {
	s := newSite(t, withoutSync()).start()
	_, body := s.get("/status")
	var st edge.StatusResponse
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	require.Nil(t, st.LastSync)
	require.Nil(t, st.SyncAgeSeconds)
	require.True(t, st.Stale)
	require.Nil(t, st.Outbox.Oldest)
	require.Equal(t, "unknown", st.Gates[0].Direction, "the cloud has not sent the gate")
	samples, _ := s.metrics()
	require.Equal(t, "+Inf", fmt.Sprint(samples["svc_edge_sync_age_seconds"]))
}

// TestApp_RealListener: the App serves its API on cfg.Listen itself.
func TestApp_RealListener(t *testing.T) {
	s := newSite(t).start()
	resp, err := http.Get("http://" + s.app.Listening().HTTP.String() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestApp_StopReleasesEverything(t *testing.T) {
	s := newSite(t).start()
	addr := s.app.Listening().HTTP.String()
	reader := s.app.Listening().Readers[s.exit][0].String()
	require.NoError(t, s.stop())
	_, err := net.Dial("tcp", addr)
	require.Error(t, err, "the HTTP listener is closed")
	_, err = net.Dial("tcp", reader)
	require.Error(t, err, "the reader's listener is closed")
	c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: s.cfg.EdgeID})
	require.NoError(t, err, "the cache file is released")
	require.NoError(t, c.Close())
	for _, name := range []string{"GPIO17", "GPIO22"} {
		w := s.pin(name).Writes()
		require.Equal(t, gpio.Low, w[len(w)-1].Level, "relay %s left inactive", name)
	}
}

func TestApp_SyncFailureStopsTheApp(t *testing.T) {
	s := newSite(t, withSyncFailure(errBrokerDown))
	app, err := edge.New(s.cfg, s.deps())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- app.Run(context.Background()) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, errBrokerDown)
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on without its sync half")
	}
	c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: s.cfg.EdgeID})
	require.NoError(t, err, "the cache was closed")
	require.NoError(t, c.Close())
}

func TestApp_DamagedCacheStopsTheApp(t *testing.T) {
	// The file shrinks under the running App; the next read of it (here
	// /healthz's) faults on bbolt's map. The App stops with the cache's
	// error instead of crashing or going on.
	s := newSite(t).start()
	require.NoError(t, os.Truncate(s.cfg.CachePath, 4096))
	resp, body := s.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "damaged")
	select {
	case err := <-s.done:
		close(s.done)
		require.ErrorIs(t, err, cache.ErrDamaged)
		require.ErrorContains(t, err, s.cfg.CachePath)
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on with a damaged cache")
	}
}

func TestApp_StartFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	for name, mod := range map[string]func(s *site){
		"http port in use":   func(s *site) { s.cfg.Listen = busy.Addr().String() },
		"reader port in use": func(s *site) { s.cfg.Gates[1].Readers[0].Listen = busy.Addr().String() },
		"no such pin":        func(s *site) { s.cfg.Gates[1].Relay.Pin = "GPIO99" },
		"cache of another edge": func(s *site) {
			c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: ids.New(ids.Edge)})
			require.NoError(t, err)
			require.NoError(t, c.Close())
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSite(t)
			require.NoError(t, mkdirFor(s.cfg.CachePath))
			mod(s)
			d := s.deps()
			d.OpenPin = func(name string) (gpio.PinIO, error) {
				if name == "GPIO99" {
					return nil, fmt.Errorf("open pin %s: no such pin", name)
				}
				return s.openPin(name)
			}
			app, err := edge.New(s.cfg, d)
			require.NoError(t, err)
			err = app.Run(context.Background())
			require.Error(t, err)
			require.Contains(t, err.Error(), "edge: ")
			select {
			case <-app.Ready():
				t.Fatal("an App that failed to start is not ready")
			default:
			}
			if name != "cache of another edge" {
				c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: s.cfg.EdgeID})
				require.NoError(t, err, "the cache was closed after the failure")
				require.NoError(t, c.Close())
			}
		})
	}
}

func TestNew_Refuses(t *testing.T) {
	s := newSite(t)
	for name, mod := range map[string]func(c *config.Config){
		"edge ID":  func(c *config.Config) { c.EdgeID = "edge_nope" },
		"site":     func(c *config.Config) { c.Site.Mode = "prod" },
		"no cache": func(c *config.Config) { c.CachePath = "" },
	} {
		cfg := *s.cfg
		mod(&cfg)
		_, err := edge.New(&cfg, s.deps())
		require.Error(t, err, name)
	}
	_, err := edge.New(nil, edge.Deps{})
	require.Error(t, err)
}

func TestSimulatedPins_OnePinPerName(t *testing.T) {
	open := edge.SimulatedPins(nil)
	a, err := open("GPIO17")
	require.NoError(t, err)
	b, _ := open("GPIO17")
	c, _ := open("GPIO22")
	require.Same(t, a, b)
	require.NotSame(t, a, c)
	require.Equal(t, "GPIO17", a.Name())
}

// An employee's personal pass at the App's gates: a punch in at the entry,
// out at the exit, a second scan at the exit within gate.PunchRepeat opens
// it again and records nothing, and a deactivated person is refused. The
// punches are in the outbox the sync half publishes, and the status and
// metrics count them.
func TestApp_PersonalPassPunches(t *testing.T) {
	s := newSite(t).start()
	scan := func(gateID, body string) edge.ScanResponse {
		t.Helper()
		resp, text := s.post("/gates/"+gateID+"/scan", "text/plain", strings.NewReader(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, text)
		var out edge.ScanResponse
		require.NoError(t, json.Unmarshal([]byte(text), &out), text)
		return out
	}
	erin, gone := s.people[0], s.people[1]

	in := scan(s.entry, s.personToken(erin))
	require.True(t, in.Admitted)
	require.Equal(t, "punch", in.Kind)
	require.Equal(t, protocol.DirectionIn, in.Direction)
	require.Equal(t, erin.ID, in.PersonID)
	require.NotEmpty(t, in.FactID)
	s.waitNotified()

	s.clock.set(t0.Add(30 * time.Minute))
	out := scan(s.exit, s.personToken(erin))
	require.Equal(t, protocol.DirectionOut, out.Direction)
	require.NotEmpty(t, out.FactID)
	s.clock.set(t0.Add(30*time.Minute + 20*time.Second))
	again := scan(s.exit, s.personToken(erin))
	require.True(t, again.Admitted)
	require.True(t, again.Repeat)
	require.Equal(t, "passage", again.Kind, "a repeat is an opening, not a new punch")
	require.NotEmpty(t, again.FactID, "every opening of the door is recorded, a repeat too")

	refused := scan(s.entry, s.personToken(gone))
	require.False(t, refused.Admitted)
	require.Equal(t, protocol.ReasonPersonInactive, refused.Reason)
	require.Equal(t, gone.ID, refused.PersonID)

	var st edge.StatusResponse
	_, body := s.get("/status")
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, 2, st.Cache.People)
	samples, _ := s.metrics()
	require.Equal(t, 2.0, samples["svc_edge_cache_people"])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="punch",reason=""}`, s.entry)])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="punch",reason=""}`, s.exit)])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="passage",reason=""}`, s.exit)])
	require.Equal(t, 1.0, samples[fmt.Sprintf(`svc_edge_scans_total{gate_id=%q,result="refused",reason="person_inactive"}`, s.entry)])
	require.Equal(t, 1, s.pulses("GPIO17"), "the entry opened once: the refusal did not open it")
	require.Equal(t, 2, s.pulses("GPIO22"), "the exit opened twice: the punch and its repeat")

	facts := s.outboxAfterStop()
	require.Len(t, facts, 4)
	for i, want := range []struct {
		kind         protocol.FactKind
		person, dir  string
		gate, reason string
		at           time.Time
	}{
		{protocol.FactPunch, erin.ID, protocol.DirectionIn, s.entry, "", t0},
		{protocol.FactPunch, erin.ID, protocol.DirectionOut, s.exit, "", t0.Add(30 * time.Minute)},
		{protocol.FactPassage, erin.ID, protocol.DirectionOut, s.exit, "", t0.Add(30*time.Minute + 20*time.Second)},
		{protocol.FactRefused, gone.ID, "", s.entry, protocol.ReasonPersonInactive, t0.Add(30*time.Minute + 20*time.Second)},
	} {
		f := facts[i]
		require.Equal(t, want.kind, f.Kind, "fact %d", i)
		require.Equal(t, want.person, f.PersonID, "fact %d", i)
		require.Equal(t, want.dir, f.Direction, "fact %d", i)
		require.Equal(t, want.gate, f.GateID, "fact %d", i)
		require.Equal(t, want.reason, f.Reason, "fact %d", i)
		require.True(t, want.at.Equal(f.At), "fact %d at the scan time", i)
	}
}

// TestApp_CacheOpened: the App calls CacheOpened once the cache is open,
// before it makes the sync half (the daemon lowers its GOGC there, after
// opening's garbage).
func TestApp_CacheOpened(t *testing.T) {
	s := newSite(t)
	var calls []string
	s.withDeps = func(d *edge.Deps) {
		d.CacheOpened = func() { calls = append(calls, "opened") }
		newSyncer := d.NewSyncer
		d.NewSyncer = func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
			calls = append(calls, "syncer")
			return newSyncer(c, badge)
		}
	}
	s.start()
	require.Equal(t, []string{"opened", "syncer"}, calls)
}
