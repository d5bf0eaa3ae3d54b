package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// onlineStatus is GET /status of an enrolled svc-edge connected to the
// cloud with a current cache, as edge.StatusResponse and
// mqttsync.EdgeState encode (printed once from the main module's types).
const onlineStatus = `{"edge_id":"edg_1","site":{"mode":"visits","org_id":"org_1","site_id":"sit_1"},"now":"2026-11-26T10:00:00Z","seq":12,` +
	`"last_sync":"2026-11-26T09:59:58Z","sync_age_seconds":2,"stale":false,"outbox":{"depth":0,"oldest":null},` +
	`"cache":{"visits":3,"gates":1,"keys":1,"people":0},"hardware":{"source":"cloud"},"gates":[],` +
	`"broker":{"Connected":true,"LastContact":"2026-11-26T10:00:00Z","SyncedAt":"2026-11-26T10:00:00Z","Seq":12,"OutboxDepth":0,` +
	`"OutboxOldest":"0001-01-01T00:00:00Z","InFlight":0,"Resyncing":false,"Counters":{"Connects":1,"ConnectErrors":0,"ChangesApplied":12,` +
	`"ResyncRequests":1,"Snapshots":1,"FactsPublished":0,"FactsAcked":0,"Dropped":0}},` +
	`"update":{"version":"1.0.0","slot":"a","enabled":true,"state":"idle"}}`

// enrollingStatus is GET /status while svc-edge enrols (enrol.go's statusPage).
const enrollingStatus = `{"enrolment":{"state":"waiting","code":"ABCD-EFGH","expires_at":"2026-11-26T10:15:00Z","cloud":"http://cloud.test",` +
	`"clock_skew_seconds":0.2,"clock_skew_warning":false}}`

// edited is onlineStatus with the top-level fields in set replaced.
func edited(t *testing.T, set map[string]any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(onlineStatus), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func brokerConnected(t *testing.T, connected bool) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(onlineStatus), &m); err != nil {
		t.Fatal(err)
	}
	b := m["broker"].(map[string]any)
	b["Connected"] = connected
	return b
}

func answer(code int, body string) probe {
	return probe{code: code, header: http.Header{}, body: []byte(body)}
}

var refused = probe{err: errors.New("connection refused")}

func TestDecide(t *testing.T) {
	enrolmentPage := probe{code: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {"5"}}, body: []byte("<html>enrol</html>")}
	for _, tc := range []struct {
		name          string
		status, kiosk probe
		want          appState
		detail        string // a part of the detail
	}{
		{"nothing answers", refused, refused, stateStarting, ""},
		{"the kiosk's enrolment page, no status", refused, enrolmentPage, stateEnrolling, "port 8088"},
		{"the enrolled kiosk redirects to pairing, no status", refused,
			probe{code: http.StatusSeeOther, header: http.Header{"Location": {"/pair"}}}, stateStarting, ""},
		{"a 503 without Retry-After is no enrolment page", refused, answer(http.StatusServiceUnavailable, "busy"), stateStarting, ""},
		{"enrolling with a code", answer(200, enrollingStatus), probe{}, stateEnrolling, "enrolment code ABCD-EFGH"},
		{"enrolling before the cloud gave a code", answer(200, `{"enrolment":{"state":"starting","cloud":"http://cloud.test","last_error":"dial tcp: refused"}}`),
			probe{}, stateEnrolling, "asking the cloud for a code: dial tcp: refused"},
		{"enrolment claimed", answer(200, `{"enrolment":{"state":"claimed","cloud":"http://cloud.test"}}`), probe{}, stateEnrolling, "claimed"},
		{"online and current", answer(200, onlineStatus), probe{}, stateOnline, ""},
		{"broker not connected", answer(200, edited(t, map[string]any{"broker": brokerConnected(t, false)})), probe{}, stateOffline, "not connected"},
		{"no sync half yet", answer(200, edited(t, map[string]any{"broker": nil})), probe{}, stateOffline, "not connected"},
		{"broker state unencodable", answer(200, edited(t, map[string]any{"broker": map[string]any{"error": "json: unsupported"}})),
			probe{}, stateOffline, "json: unsupported"},
		{"connected but stale", answer(200, edited(t, map[string]any{"stale": true, "stale_reason": "the cache has never been synced with the cloud"})),
			probe{}, stateOffline, "never been synced"},
		{"downloading a release", answer(200, edited(t, map[string]any{"update": map[string]any{"version": "1.0.0", "state": "downloading", "target": "2.0.0"}})),
			probe{}, stateUpdating, "downloading release 2.0.0"},
		{"trial requested", answer(200, edited(t, map[string]any{"update": map[string]any{"version": "1.0.0", "state": "trial_requested", "target": "2.0.0"}})),
			probe{}, stateUpdating, "restarting into release 2.0.0"},
		{"updating while offline", answer(200, edited(t, map[string]any{"broker": brokerConnected(t, false),
			"update": map[string]any{"state": "verifying", "target": "2.0.0"}})), probe{}, stateUpdating, "verifying"},
		{"an update's last error alone is no update", answer(200, edited(t, map[string]any{"update": map[string]any{"state": "idle", "error": "no release"}})),
			probe{}, stateOnline, ""},
		{"hardware error, before updating and offline", answer(200, edited(t, map[string]any{"broker": brokerConnected(t, false),
			"hardware": map[string]any{"source": "config", "error": "relay 17: no such pin"},
			"update":   map[string]any{"state": "downloading"}})), probe{}, stateFault, "relay 17: no such pin"},
		{"the cache fails", answer(500, `{"error":"cache: disk I/O error"}`), probe{}, stateFault, "500: cache: disk I/O error"},
		{"a 404 in plain text", answer(404, "404 page not found\n"), probe{}, stateFault, "404: Not Found"},
		{"something else answers", answer(200, "<html></html>"), probe{}, stateFault, "not with svc-edge's status"},
		{"JSON that is neither", answer(200, `{"hello":1}`), probe{}, stateFault, "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail := decide(tc.status, tc.kiosk)
			if got != tc.want {
				t.Errorf("state %q (%s), want %q", shown[got].what, detail, shown[tc.want].what)
			}
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q, want it to contain %q", detail, tc.detail)
			}
		})
	}
}

// fakeLED makes an LED's sysfs directory under sys with the files the
// kernel's timer trigger has.
func fakeLED(t *testing.T, sys, name string) string {
	t.Helper()
	dir := filepath.Join(sys, "class", "leds", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"trigger": "mmc0", "delay_on": "500", "delay_off": "500", "brightness": "0"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func attr(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFindLED(t *testing.T) {
	sys := t.TempDir()
	if got := findLED(sys); got != "" {
		t.Errorf("no LED: found %q", got)
	}
	led0 := fakeLED(t, sys, "led0")
	fakeLED(t, sys, "led1")
	if got := findLED(sys); got != led0 {
		t.Errorf("led0 alone: found %q, want %q", got, led0)
	}
	act := fakeLED(t, sys, "ACT")
	if got := findLED(sys); got != act {
		t.Errorf("ACT and led0: found %q, want ACT %q", got, act)
	}
}

// logs records log lines.
type logs struct{ lines []string }

func (l *logs) logf(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func TestLEDShowsPatterns(t *testing.T) {
	dir := fakeLED(t, t.TempDir(), "ACT")
	var lg logs
	l := &led{dir: dir, logf: lg.logf}
	l.show(shown[stateEnrolling].pattern)
	if got := attr(t, dir, "trigger") + " " + attr(t, dir, "delay_on") + "/" + attr(t, dir, "delay_off"); got != "timer 100/100" {
		t.Errorf("not enrolled: %s, want timer 100/100", got)
	}
	l.show(shown[stateUpdating].pattern)
	if got := attr(t, dir, "trigger") + " " + attr(t, dir, "delay_on") + "/" + attr(t, dir, "delay_off"); got != "timer 100/900" {
		t.Errorf("updating: %s, want timer 100/900", got)
	}
	l.show(shown[stateOnline].pattern)
	if got := attr(t, dir, "trigger"); got != "default-on" {
		t.Errorf("online: trigger %q, want default-on", got)
	}
	l.show(shown[stateStarting].pattern)
	if got := attr(t, dir, "trigger"); got != "heartbeat" {
		t.Errorf("starting: trigger %q, want heartbeat", got)
	}
	if len(lg.lines) != 0 {
		t.Errorf("logged %q", lg.lines)
	}
}

func TestLEDWriteFailsLogsOnceAndGoesOn(t *testing.T) {
	dir := fakeLED(t, t.TempDir(), "ACT")
	// delay_on cannot be written (a directory in its place; root writes
	// any file whatever its mode).
	if err := os.Remove(filepath.Join(dir, "delay_on")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "delay_on"), 0o755); err != nil {
		t.Fatal(err)
	}
	var lg logs
	l := &led{dir: dir, logf: lg.logf}
	l.show(shown[stateEnrolling].pattern)
	l.show(shown[stateOffline].pattern)
	if len(lg.lines) != 1 || !strings.Contains(lg.lines[0], "delay_on") {
		t.Fatalf("two failed writes logged %q, want one line about delay_on", lg.lines)
	}
	// What could be written was: the trigger and the other delay.
	if got := attr(t, dir, "trigger") + " " + attr(t, dir, "delay_off"); got != "timer 1000" {
		t.Errorf("after the failures: %s, want timer 1000", got)
	}
	l.show(shown[stateOnline].pattern)
	if got := attr(t, dir, "trigger"); got != "default-on" {
		t.Errorf("online: trigger %q, want default-on", got)
	}
	// Once a pattern went through, the next failure is news again.
	l.show(shown[stateOffline].pattern)
	if len(lg.lines) != 2 {
		t.Errorf("a failure after a success: logged %q, want a second line", lg.lines)
	}
}

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

// fakeEdge serves GET /status with what body holds (a code and a body).
type fakeEdge struct {
	code atomic.Int32
	body atomic.Value // string
	hits atomic.Int32
}

func (f *fakeEdge) set(code int, body string) { f.code.Store(int32(code)); f.body.Store(body) }

func (f *fakeEdge) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.hits.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(f.code.Load()))
	fmt.Fprint(w, f.body.Load())
}

func TestStepShowsChangesOnly(t *testing.T) {
	dir := fakeLED(t, t.TempDir(), "ACT")
	edge := &fakeEdge{}
	srv := httptest.NewServer(edge)
	defer srv.Close()
	var lg logs
	w := newStatusWatch(dir, lg.logf)
	w.statusURL, w.kiosk = closedURL(t), closedURL(t)

	w.step()
	if got := attr(t, dir, "trigger"); got != "heartbeat" {
		t.Errorf("nothing answers: trigger %q, want heartbeat", got)
	}
	w.statusURL = srv.URL + "/status"
	edge.set(200, enrollingStatus)
	w.step()
	if got := attr(t, dir, "trigger") + " " + attr(t, dir, "delay_on"); got != "timer 100" {
		t.Errorf("enrolling: %s, want timer 100", got)
	}
	edge.set(200, onlineStatus)
	w.step()
	if got := attr(t, dir, "trigger"); got != "default-on" {
		t.Errorf("online: trigger %q, want default-on", got)
	}
	// The same state again: nothing is written (the mark stays) and
	// nothing logged.
	if err := os.WriteFile(filepath.Join(dir, "trigger"), []byte("mark"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.step()
	if got := attr(t, dir, "trigger"); got != "mark" {
		t.Errorf("unchanged state: trigger rewritten to %q", got)
	}
	want := []string{
		"status: starting (LED heartbeat)",
		"status: not enrolled (LED blinks fast): enrolment code ABCD-EFGH",
		"status: online (LED on)",
	}
	if strings.Join(lg.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(lg.lines, "\n"), strings.Join(want, "\n"))
	}
	if n := edge.hits.Load(); n != 3 {
		t.Errorf("GET /status %d times in 3 steps after it answered", n)
	}
}

func TestStepAsksTheKioskOnlyWithoutStatus(t *testing.T) {
	kiosk := &fakeEdge{}
	kiosk.set(http.StatusServiceUnavailable, "<html>enrolment</html>")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		kiosk.ServeHTTP(w, r)
	}))
	defer srv.Close()
	edge := &fakeEdge{}
	edge.set(200, onlineStatus)
	esrv := httptest.NewServer(edge)
	defer esrv.Close()
	var lg logs
	w := newStatusWatch(fakeLED(t, t.TempDir(), "ACT"), lg.logf)
	w.statusURL, w.kiosk = closedURL(t), srv.URL+"/"
	w.step()
	if w.state != stateEnrolling {
		t.Errorf("the kiosk's enrolment page: %q, want not enrolled", shown[w.state].what)
	}
	w.statusURL = esrv.URL + "/status"
	w.step()
	if w.state != stateOnline || kiosk.hits.Load() != 1 {
		t.Errorf("status answers: %q, kiosk asked %d times, want online and once", shown[w.state].what, kiosk.hits.Load())
	}
}

func TestProbeFollowsNoRedirect(t *testing.T) {
	elsewhere := &fakeEdge{}
	elsewhere.set(200, onlineStatus)
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/status", http.StatusFound))
	defer srv.Close()
	w := newStatusWatch("", (&logs{}).logf)
	p := w.get(srv.URL + "/status")
	if p.err != nil || p.code != http.StatusFound || elsewhere.hits.Load() != 0 {
		t.Errorf("a redirect elsewhere: %d, %v, the other host asked %d times; want the 302 itself", p.code, p.err, elsewhere.hits.Load())
	}
}

func TestProbeTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handler
	w := newStatusWatch("", (&logs{}).logf)
	w.client.Timeout = 50 * time.Millisecond
	start := time.Now()
	p := w.get(srv.URL + "/status")
	if p.err == nil {
		t.Fatalf("a server that never answers: %d, want an error", p.code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %s", d)
	}
	if s, _ := decide(p, refused); s != stateStarting {
		t.Errorf("a status that times out: %q, want starting", shown[s].what)
	}
}

// captureLog sends the standard logger's output to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	log.SetFlags(0)
	t.Cleanup(func() { log.SetOutput(out); log.SetFlags(flags) })
	return &buf
}

// TestWatchWithoutLED_TellsTheConsole: a board without an LED (qemu's)
// still has each state on its console, and nothing is written to sysfs.
func TestWatchWithoutLED_TellsTheConsole(t *testing.T) {
	var lines []string
	w := newStatusWatch("", func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
	w.statusURL, w.kiosk = closedURL(t), closedURL(t)
	ticks := make(chan time.Time)
	close(ticks)
	w.watch(ticks)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "status: starting") {
		t.Errorf("logged %q, want the starting state", lines)
	}
}

func TestWatchRecoversFromPanic(t *testing.T) {
	buf := captureLog(t)
	w := newStatusWatch(fakeLED(t, t.TempDir(), "ACT"), func(string, ...any) { panic("a bug") })
	w.statusURL, w.kiosk = closedURL(t), closedURL(t)
	ticks := make(chan time.Time)
	close(ticks)
	w.watch(ticks) // the first step logs its state: the panic
	if got := buf.String(); !strings.HasPrefix(got, "status LED stopped: a bug\n") {
		t.Errorf("logged %q", got)
	}
}
