package main

// The status LED: an installer tells the appliance's state without a
// keyboard or a screen from the board's activity LED (a Raspberry Pi's
// green one), and from one console line per change of state. The state
// comes from svc-edge's local HTTP API, asked every statusEvery.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

const (
	// statusURL is svc-edge's local API (config.DefaultListen, which
	// enrolment writes into the configuration): once enrolled its
	// edge.StatusResponse, while enrolling {"enrolment": enrol.Status}.
	statusURL = "http://127.0.0.1:8081/status"
	// kioskURL is the kiosk on kioskListen: while enrolling, every page
	// is the enrolment page. It is asked only when statusURL does not
	// answer (svc-edge serves the status while enrolling only if it
	// could listen there).
	kioskURL     = "http://127.0.0.1:8088/"
	statusEvery  = 2 * time.Second
	probeTimeout = time.Second
	// probeLimit bounds what is read of an answer: /status is a few KiB.
	probeLimit = 1 << 20
)

// appState is the appliance's state as the LED shows it.
type appState int

const (
	stateUnknown   appState = iota // nothing shown yet
	stateStarting                  // svc-edge does not answer yet
	stateEnrolling                 // not enrolled: svc-edge shows an enrolment code
	stateOffline                   // enrolled, not connected to the cloud (or not current)
	stateOnline                    // connected, and the cache is current
	stateUpdating                  // downloading, verifying or restarting into a release
	stateFault                     // a hardware error, or svc-edge reports a failure
)

// ledPattern is what the LED's sysfs trigger shows; on and off are the
// timer trigger's delays in milliseconds.
type ledPattern struct {
	trigger string
	on, off int
}

// shown is each state's LED pattern and console words.
var shown = map[appState]struct {
	what, led string
	pattern   ledPattern
}{
	stateStarting:  {"starting", "LED heartbeat", ledPattern{trigger: "heartbeat"}},
	stateEnrolling: {"not enrolled", "LED blinks fast", ledPattern{trigger: "timer", on: 100, off: 100}},
	stateOffline:   {"enrolled, no cloud connection", "LED blinks slowly", ledPattern{trigger: "timer", on: 1000, off: 1000}},
	stateOnline:    {"online", "LED on", ledPattern{trigger: "default-on"}},
	stateUpdating:  {"updating", "LED flashes once a second", ledPattern{trigger: "timer", on: 100, off: 900}},
	stateFault:     {"fault", "LED flashes once a second", ledPattern{trigger: "timer", on: 100, off: 900}},
}

// probe is what one GET returned; err is set when nothing answered.
type probe struct {
	err    error
	code   int
	header http.Header
	body   []byte
}

// edgeStatus is the few fields of svc-edge's GET /status that the LED
// needs. They are edge.StatusResponse's (edge/api.go) and, under
// "enrolment", enrol.Status's; this module cannot import the main module
// (github.com/svc-vms/svc, not published: it would take a replace
// directive and its dependencies into init), so they are declared again.
type edgeStatus struct {
	// Enrolment is set while svc-edge enrols (edge/cmd/svc-edge/enrol.go's
	// statusPage), and nothing else is.
	Enrolment *struct {
		State string `json:"state"` // "starting", waiting, claimed, ...
		Code  string `json:"code"`
		Error string `json:"last_error"`
	} `json:"enrolment"`
	EdgeID      string `json:"edge_id"`
	Stale       bool   `json:"stale"`
	StaleReason string `json:"stale_reason"`
	Hardware    struct {
		Error string `json:"error"`
	} `json:"hardware"`
	// Broker is mqttsync.EdgeState, which has no JSON tags: its fields
	// are under their Go names. null before the sync half is made.
	Broker json.RawMessage `json:"broker"`
	Update *struct {
		State  string `json:"state"` // idle, downloading, verifying or trial_requested
		Target string `json:"target"`
	} `json:"update"`
	Error string `json:"error"` // edge.ErrorResponse, with a 500
}

// decide is the appliance's state from what GET statusURL and GET
// kioskURL returned (kiosk is the zero probe when it was not asked), and
// a detail for the console line.
func decide(status, kiosk probe) (appState, string) {
	if status.err != nil {
		// An enrolment page is a 503 with Retry-After
		// (kiosk.EnrolmentHandler); the enrolled kiosk redirects to its
		// pairing page.
		if kiosk.err == nil && kiosk.code == http.StatusServiceUnavailable && kiosk.header.Get("Retry-After") != "" {
			return stateEnrolling, "the enrolment code is on the console above and on the page at port 8088"
		}
		return stateStarting, ""
	}
	var st edgeStatus
	err := json.Unmarshal(status.body, &st)
	switch {
	case status.code != http.StatusOK:
		why := http.StatusText(status.code)
		if err == nil && st.Error != "" {
			why = st.Error // edge.ErrorResponse: the cache failed
		}
		return stateFault, fmt.Sprintf("svc-edge's status answers %d: %s", status.code, why)
	case err != nil:
		return stateFault, fmt.Sprintf("%s answers, not with svc-edge's status: %v", statusURL, err)
	}
	switch {
	case st.Enrolment != nil:
		switch e := st.Enrolment; {
		case e.Code != "":
			return stateEnrolling, "enrolment code " + e.Code
		case e.State == "claimed":
			return stateEnrolling, "claimed, collecting its configuration"
		case e.Error != "":
			return stateEnrolling, "asking the cloud for a code: " + e.Error
		}
		return stateEnrolling, "asking the cloud for a code"
	case st.EdgeID == "":
		return stateFault, statusURL + " answers, but neither an enrolment nor an edge's status"
	case st.Hardware.Error != "":
		return stateFault, "hardware error: the gates' hardware from the cloud is not applied: " + st.Hardware.Error
	}
	if u := st.Update; u != nil {
		switch u.State {
		case "downloading", "verifying":
			return stateUpdating, u.State + " release " + u.Target
		case "trial_requested":
			return stateUpdating, "restarting into release " + u.Target + " on trial"
		}
	}
	var broker struct {
		Connected bool
		Error     string // when svc-edge could not encode the state
	}
	if len(st.Broker) > 0 && string(st.Broker) != "null" {
		if err := json.Unmarshal(st.Broker, &broker); err != nil {
			return stateOffline, fmt.Sprintf("the broker's state is unreadable: %v", err)
		}
	}
	switch {
	case broker.Error != "":
		return stateOffline, "the broker's state: " + broker.Error
	case !broker.Connected:
		return stateOffline, "not connected to the cloud's broker"
	case st.Stale:
		return stateOffline, "connected, but the cache is not current: " + st.StaleReason
	}
	return stateOnline, ""
}

// findLED is the board's activity LED's sysfs directory under sys
// (/sys): ACT, or led0 on older Raspberry Pi kernels; "" when neither is.
func findLED(sys string) string {
	for _, name := range []string{"ACT", "led0"} {
		dir := filepath.Join(sys, "class", "leds", name)
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
	}
	return ""
}

// led writes patterns into an LED's sysfs directory. A failure is logged
// once, until a pattern is written again; the LED then shows whatever
// part of the pattern went through.
type led struct {
	dir     string
	logf    func(format string, args ...any)
	failing bool
}

func (l *led) show(p ledPattern) {
	if l.dir == "" { // no LED on this board
		return
	}
	errs := []error{writeAttr(l.dir, "trigger", p.trigger)}
	if p.trigger == "timer" {
		// The kernel makes these files when the timer trigger is set.
		errs = append(errs, writeAttr(l.dir, "delay_on", fmt.Sprint(p.on)), writeAttr(l.dir, "delay_off", fmt.Sprint(p.off)))
	}
	err := errors.Join(errs...)
	if err != nil && !l.failing {
		l.logf("status LED %s: %v", l.dir, err)
	}
	l.failing = err != nil
}

// writeAttr writes value into the sysfs attribute dir/name, which must
// exist: a missing one is an error, not a new file.
func writeAttr(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// statusWatch decides the appliance's state and shows it when it changes.
type statusWatch struct {
	client           *http.Client
	statusURL, kiosk string
	led              *led
	logf             func(format string, args ...any)
	state            appState
}

func newStatusWatch(ledDir string, logf func(string, ...any)) *statusWatch {
	return &statusWatch{
		client: &http.Client{
			Timeout: probeTimeout,
			// The probes want svc-edge's own answer: a redirect (the
			// enrolled kiosk's to its pairing page) is the answer, and
			// nothing elsewhere is asked.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// No proxy from the environment, no idle connections kept to
			// a daemon that restarts.
			Transport: &http.Transport{DisableKeepAlives: true},
		},
		statusURL: statusURL, kiosk: kioskURL,
		led:  &led{dir: ledDir, logf: logf},
		logf: logf,
	}
}

// get is one probe of url.
func (w *statusWatch) get(url string) probe {
	resp, err := w.client.Get(url)
	if err != nil {
		return probe{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, probeLimit))
	if err != nil {
		return probe{err: err}
	}
	return probe{code: resp.StatusCode, header: resp.Header, body: body}
}

// step decides the state once, and shows it if it changed.
func (w *statusWatch) step() {
	status := w.get(w.statusURL)
	var kiosk probe
	if status.err != nil {
		kiosk = w.get(w.kiosk)
	}
	s, detail := decide(status, kiosk)
	if s == w.state {
		return
	}
	w.state = s
	line := "status: " + shown[s].what + " (" + shown[s].led + ")"
	if detail != "" {
		line += ": " + detail
	}
	w.logf("%s", line)
	w.led.show(shown[s].pattern)
}

// watch steps at every tick, until ticks is closed. A panic is logged and
// ends the watch (stopOnPanic).
func (w *statusWatch) watch(ticks <-chan time.Time) {
	defer stopOnPanic()
	w.step()
	for range ticks {
		w.step()
	}
}

// stopOnPanic, deferred, logs a panic and ends the goroutine's work
// there: init is PID 1, and a panic there panics the kernel.
func stopOnPanic() {
	if r := recover(); r != nil {
		log.Printf("status LED stopped: %v\n%s", r, debug.Stack())
	}
}

// statusLED shows svc-edge's state on the board's activity LED under sys
// (/sys) and on the console, from now on; it returns at once on a board
// without one. Run it in its own goroutine.
func statusLED(sys string) {
	defer stopOnPanic()
	dir := findLED(sys)
	if dir == "" {
		// The states are still told on the console, for the screen.
		log.Printf("status LED: none on this board; the states are told on the console only")
	} else {
		log.Printf("status LED: %s", dir)
	}
	newStatusWatch(dir, log.Printf).watch(time.NewTicker(statusEvery).C)
}
