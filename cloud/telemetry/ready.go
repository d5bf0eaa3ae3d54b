package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/svc-vms/svc/cloud"
)

// readiness is /readyz's body: the verdict, and each check's. The reason
// a check failed is logged, not sent: the probe may answer on the
// public API's listener, and a database error names hosts.
type readiness struct {
	Status string `json:"status"` // ok, fail, or draining (Drain was called)
	Checks checks `json:"checks"`
}

type checks struct {
	// Database is ok when the database answered within the timeout.
	Database string `json:"database"`
	// Migrations is ok when the database holds every migration this
	// program carries, and unknown when the database did not answer.
	Migrations string `json:"migrations"`
	// Broker is ok when the process is connected to its MQTT broker;
	// absent for a process without one.
	Broker string `json:"broker,omitempty"`
}

// Readyz answers 200 when the process can serve: its database answers
// within the timeout and holds every migration, and its MQTT broker (when
// it has one) is connected; 503 otherwise, and always once Drain was
// called, with the status "draining". The JSON body names each check and
// its result.
func (t *Telemetry) Readyz(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	res, err := t.check(r.Context())
	status := http.StatusOK
	if t.draining.Load() {
		// The checks still run and are shown: an operator reading the
		// body sees why else the process might not be ready.
		res.Status = "draining"
	}
	if res.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	t.logChange(res, err)
	body, _ := json.Marshal(res) // strings only
	writeProbe(w, r, status, append(body, '\n'))
}

// Drain turns /readyz to 503 for good: the process is stopping, and a
// load balancer should send it no new requests, while those it still
// sends (until its next probes fail) are served as before.
func (t *Telemetry) Drain() { t.draining.Store(true) }

// check runs the readiness checks; err is the database's, for the log.
func (t *Telemetry) check(ctx context.Context) (readiness, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	res := readiness{Status: "ok", Checks: checks{Database: "ok", Migrations: "ok"}}
	err := t.store.Ready(ctx)
	switch {
	case errors.Is(err, cloud.ErrSchemaBehind):
		res.Checks.Migrations = "fail"
	case err != nil:
		res.Checks.Database, res.Checks.Migrations = "fail", "unknown"
	}
	if t.sync != nil {
		res.Checks.Broker = "ok"
		if !t.sync().Connected {
			res.Checks.Broker = "fail"
		}
	}
	if res.Checks.Database != "ok" || res.Checks.Migrations != "ok" || res.Checks.Broker == "fail" {
		res.Status = "fail"
	}
	return res, err
}

// logChange logs the readiness when it changed since the last probe: a
// load balancer probing every second would otherwise write a line a
// second through an outage.
func (t *Telemetry) logChange(res readiness, err error) {
	var failing []string
	for _, c := range []struct{ name, result string }{
		{"database", res.Checks.Database}, {"migrations", res.Checks.Migrations}, {"broker", res.Checks.Broker}} {
		if c.result == "fail" {
			failing = append(failing, c.name)
		}
	}
	now := strings.Join(failing, ",")
	t.readyMu.Lock()
	changed := now != t.lastReady
	t.lastReady = now
	t.readyMu.Unlock()
	switch {
	case !changed:
	case now == "":
		t.log.Info("ready")
	default:
		t.log.Warn("not ready", "failing", now, "err", err)
	}
}
