package edge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/gate"
)

// decisionBuckets are the upper bounds of the decision-latency histogram,
// in seconds: fine below the 1 ms budget, coarse above it.
var decisionBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.1}

// Scan error kinds, the kind label of svc_edge_scan_errors_total.
const (
	errRelay     = "relay"
	errRecord    = "record"
	errAbandoned = "abandoned"
)

type scanKey struct{ gate, result, reason string }

type histogram struct {
	counts []uint64 // one per bucket, not cumulative
	sum    float64
	count  uint64
}

// metrics counts what the App's gates did, for GET /metrics. The gauges
// are read from the cache when scraped.
type metrics struct {
	mu         sync.Mutex
	decisions  map[string]*histogram // gate → latency
	scans      map[scanKey]uint64
	scanErrors map[scanKey]uint64 // reason holds the error kind
	doors      map[string]bool    // gate → open, for gates with a sensor
	pruned     uint64
}

func newMetrics() *metrics {
	return &metrics{decisions: map[string]*histogram{}, scans: map[scanKey]uint64{}, scanErrors: map[scanKey]uint64{}, doors: map[string]bool{}}
}

// observe counts one scan.
func (m *metrics) observe(res gate.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if res.Err != nil {
		kind := errRecord
		switch {
		case errors.Is(res.Err, gate.ErrRelay):
			kind = errRelay
		case !errors.Is(res.Err, gate.ErrRecord):
			kind = errAbandoned
		}
		m.scanErrors[scanKey{gate: res.GateID, reason: kind}]++
	}
	if res.Kind == "" { // abandoned before a decision
		return
	}
	m.scans[scanKey{res.GateID, string(res.Kind), res.Reason}]++
	h := m.decisions[res.GateID]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(decisionBuckets))}
		m.decisions[res.GateID] = h
	}
	s := res.Decision.Seconds()
	if i, _ := slices.BinarySearch(decisionBuckets, s); i < len(decisionBuckets) {
		h.counts[i]++
	}
	h.sum += s
	h.count++
}

func (m *metrics) door(gateID string, open bool) {
	m.mu.Lock()
	m.doors[gateID] = open
	m.mu.Unlock()
}

// forgetDoor drops a door sensor a hardware change took away.
func (m *metrics) forgetDoor(gateID string) {
	m.mu.Lock()
	delete(m.doors, gateID)
	m.mu.Unlock()
}

func (m *metrics) doorOpen(gateID string) (open, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	open, known = m.doors[gateID]
	return open, known
}

func (m *metrics) addPruned(n int) {
	m.mu.Lock()
	m.pruned += uint64(n)
	m.mu.Unlock()
}

// gauges are read from the cache at each scrape.
type gauges struct {
	view   *cache.View
	outbox int
	oldest time.Time
	now    time.Time
	stale  bool
	// failing is the cache's write failure, nil while writes commit.
	failing error
	// update is the state of updates; nil when main wires none.
	update *UpdateStatus
	// sync is the sync half's connection and counters; nil when main
	// wires none.
	sync *SyncMetrics
	// version is the release running, for svc_edge_build_info.
	version string
}

// SyncMetrics are the sync half's figures for GET /metrics: whether it is
// connected to the broker, and its counters since the process started.
type SyncMetrics struct {
	Connected      bool
	Connects       uint64 // connections made
	ConnectErrors  uint64 // failed connection attempts
	ChangesApplied uint64 // feed changes applied to the cache
	ResyncRequests uint64
	Snapshots      uint64 // snapshots applied
	FactsPublished uint64 // including republications
	FactsAcked     uint64
	Dropped        uint64 // malformed or foreign messages, or an inbox full
	InFlight       int    // facts published and not yet acknowledged
}

// write writes every metric in the Prometheus text format, version 0.0.4.
func (m *metrics) write(w io.Writer, g gauges) error {
	bw := bufio.NewWriter(w)
	p := &promWriter{w: bw}

	m.mu.Lock()
	p.family("svc_edge_decision_seconds", "histogram", "Time to verify a scanned token and decide, by gate.")
	for _, id := range sortedKeys(m.decisions) {
		h := m.decisions[id]
		var cum uint64
		for i, le := range decisionBuckets {
			cum += h.counts[i]
			p.sample("svc_edge_decision_seconds_bucket", float64(cum), "gate_id", id, "le", formatFloat(le))
		}
		p.sample("svc_edge_decision_seconds_bucket", float64(h.count), "gate_id", id, "le", "+Inf")
		p.sample("svc_edge_decision_seconds_sum", h.sum, "gate_id", id)
		p.sample("svc_edge_decision_seconds_count", float64(h.count), "gate_id", id)
	}
	p.family("svc_edge_scans_total", "counter", "Scans decided, by gate, result (the fact recorded: passage for a punch repeated) and refusal reason (record_failed when the admit could not be recorded and nothing opened).")
	for _, k := range sortedScanKeys(m.scans) {
		p.sample("svc_edge_scans_total", float64(m.scans[k]), "gate_id", k.gate, "result", k.result, "reason", k.reason)
	}
	p.family("svc_edge_scan_errors_total", "counter", "Scans whose relay pulse or record failed, or that were abandoned, by gate and kind.")
	for _, k := range sortedScanKeys(m.scanErrors) {
		p.sample("svc_edge_scan_errors_total", float64(m.scanErrors[k]), "gate_id", k.gate, "kind", k.reason)
	}
	if len(m.doors) > 0 {
		p.family("svc_edge_door_open", "gauge", "1 while the gate's door sensor reads open.")
		for _, id := range sortedKeys(m.doors) {
			p.sample("svc_edge_door_open", boolFloat(m.doors[id]), "gate_id", id)
		}
	}
	p.family("svc_edge_pruned_visits_total", "counter", "Visits pruned from the cache after their pass ended.")
	p.sample("svc_edge_pruned_visits_total", float64(m.pruned))
	m.mu.Unlock()

	counts := g.view.Counts()
	p.gauge("svc_edge_outbox_facts", "Facts waiting for the cloud's acknowledgement.", float64(g.outbox))
	oldest := 0.0
	if !g.oldest.IsZero() {
		oldest = max(0, g.now.Sub(g.oldest).Seconds())
	}
	p.gauge("svc_edge_outbox_oldest_age_seconds", "Age of the oldest fact waiting; 0 when none wait.", oldest)
	age := math.Inf(1)
	if s := g.view.SyncedAt(); !s.IsZero() {
		age = max(0, g.now.Sub(s).Seconds())
	}
	p.gauge("svc_edge_sync_age_seconds", "Seconds since the last contact with the cloud; +Inf if never.", age)
	p.gauge("svc_edge_cache_stale", "1 when the cache is past the site's offline limit: gates that fail secure refuse every scan.", boolFloat(g.stale))
	p.gauge("svc_edge_cache_write_failing", "1 while the cache file does not take writes (a full disk, an I/O error): gates refuse every admit with record_failed.", boolFloat(g.failing != nil))
	p.gauge("svc_edge_cache_seq", "Last change of the cloud's feed applied.", float64(g.view.Seq()))
	p.gauge("svc_edge_cache_visits", "Visits in the cache.", float64(counts.Visits))
	p.gauge("svc_edge_cache_gates", "Gates in the cache.", float64(counts.Gates))
	p.gauge("svc_edge_cache_keys", "Pass-verification keys in the cache, retired ones included.", float64(counts.Keys))
	p.gauge("svc_edge_cache_people", "People in the cache, deactivated ones included.", float64(counts.People))
	if u := g.update; u != nil {
		p.family("svc_edge_update_info", "gauge", "1, labelled with the release running, its slot and the state of updates (idle, downloading, verifying, trial_requested).")
		p.sample("svc_edge_update_info", 1, "version", u.Version, "slot", u.Slot, "state", u.State)
		p.gauge("svc_edge_update_download_bytes", "Bytes of the release being downloaded that the inactive slot holds; 0 when none is.", float64(u.Bytes))
		p.gauge("svc_edge_update_download_size_bytes", "Size of the release being downloaded; 0 when none is.", float64(u.Size))
		failed := 0.0
		if u.Last != nil && u.Last.Outcome != "committed" {
			failed = 1
		}
		p.gauge("svc_edge_update_last_failed", "1 when the last update was rolled back or rejected (svc-edge status says why).", failed)
	}
	if sm := g.sync; sm != nil {
		p.gauge("svc_edge_broker_connected", "1 while the sync half is connected to the broker and subscribed.", boolFloat(sm.Connected))
		p.gauge("svc_edge_facts_in_flight", "Facts published and not yet acknowledged.", float64(sm.InFlight))
		for _, c := range []struct {
			name, help string
			v          uint64
		}{
			{"svc_edge_broker_connects_total", "Connections to the broker made.", sm.Connects},
			{"svc_edge_broker_connect_errors_total", "Failed connection attempts to the broker.", sm.ConnectErrors},
			{"svc_edge_changes_applied_total", "Changes of the cloud's feed applied to the cache.", sm.ChangesApplied},
			{"svc_edge_resync_requests_total", "Resync requests sent (on a gap, at every connection and every 30 s).", sm.ResyncRequests},
			{"svc_edge_snapshots_applied_total", "Snapshots that replaced the cache.", sm.Snapshots},
			{"svc_edge_facts_published_total", "Facts published to the cloud, republications included.", sm.FactsPublished},
			{"svc_edge_facts_acked_total", "Facts the cloud acknowledged (removed from the outbox).", sm.FactsAcked},
			{"svc_edge_messages_dropped_total", "MQTT messages dropped: malformed, foreign, or no room in the inbox.", sm.Dropped},
		} {
			p.family(c.name, "counter", c.help)
			p.sample(c.name, float64(c.v))
		}
	}
	p.family("svc_edge_build_info", "gauge", "1, labelled with the release running and the Go version that built it.")
	p.sample("svc_edge_build_info", 1, "version", g.version, "goversion", runtime.Version())
	writeRuntime(p)
	writeProcess(p)
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

// writeRuntime writes the Go runtime's figures under the names the
// Prometheus Go client uses (go_goroutines, go_memstats_*,
// go_gc_duration_seconds), so that the usual dashboards read them.
// ReadMemStats stops the world for microseconds on a heap this size:
// once a scrape.
func writeRuntime(p *promWriter) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	p.family("go_info", "gauge", "Information about the Go environment.")
	p.sample("go_info", 1, "version", runtime.Version())
	p.gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use.", float64(ms.HeapAlloc))
	p.gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", float64(ms.HeapInuse))
	p.gauge("go_memstats_heap_objects", "Number of allocated objects.", float64(ms.HeapObjects))
	p.gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys))
	p.gauge("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", float64(ms.NextGC))
	p.family("go_memstats_alloc_bytes_total", "counter", "Total number of bytes allocated, even if freed.")
	p.sample("go_memstats_alloc_bytes_total", float64(ms.TotalAlloc))
	p.family("go_gc_duration_seconds", "summary", "A summary of the pause duration of garbage collection cycles.")
	p.sample("go_gc_duration_seconds_sum", float64(ms.PauseTotalNs)/1e9)
	p.sample("go_gc_duration_seconds_count", float64(ms.NumGC))
}

// promWriter writes the text format, keeping the first error.
type promWriter struct {
	w   *bufio.Writer
	err error
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *promWriter) family(name, typ, help string) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) gauge(name, help string, v float64) {
	p.family(name, "gauge", help)
	p.sample(name, v)
}

// sample writes one line; labels come as name, value pairs.
func (p *promWriter) sample(name string, v float64, labels ...string) {
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i])
			b.WriteString(`="`)
			b.WriteString(labelEscaper.Replace(labels[i+1]))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	p.printf("%s %s\n", b.String(), formatFloat(v))
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedScanKeys(m map[scanKey]uint64) []scanKey {
	out := make([]scanKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b scanKey) int {
		return strings.Compare(a.gate+"\x00"+a.result+"\x00"+a.reason, b.gate+"\x00"+b.result+"\x00"+b.reason)
	})
	return out
}
