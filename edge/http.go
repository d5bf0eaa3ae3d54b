package edge

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/reader"
	"github.com/svc-vms/svc/shared/hardware"
)

// routes is the local HTTP API. It has no authentication: it listens on
// loopback unless the installer opens it to cameras on the LAN, and what
// it accepts from the LAN (a token, a frame) is what a reader accepts
// from anyone standing at the gate.
func (a *App) routes(s *site) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { a.health(w, s) })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { a.metrics(w, s) })
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) { a.status(w, s) })
	mux.HandleFunc("POST /gates/{gate_id}/scan", func(w http.ResponseWriter, r *http.Request) { a.scan(w, r, s) })
	if s.kiosk != nil {
		mux.Handle("/kiosk/", s.kiosk.srv.AdminHandler()) // loopback clients only, whatever listen is
	}
	mux.Handle("POST /gates/{gate_id}/frames", reader.NewFrames(reader.FramesConfig{
		Gates: func(id string) bool {
			s.hwMu.RLock()
			defer s.hwMu.RUnlock()
			return s.hw.cameras[id]
		},
		Deliver: s.debounced,
		Logger:  a.log,
		Now:     a.d.Now,
	}))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to tell it
}

// health answers 200 while the cache is open, takes writes and is fresh
// enough for gates that fail secure, 503 with the reason otherwise.
func (a *App) health(w http.ResponseWriter, s *site) {
	if _, _, err := s.cache.OutboxStats(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, HealthResponse{Status: "unavailable", Reason: "cache: " + err.Error()})
		return
	}
	if err := s.cache.WriteFailure(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, HealthResponse{Status: "unavailable",
			Reason: err.Error() + ": gates refuse every admit (record_failed) until a write commits"})
		return
	}
	if stale, why := gate.Staleness(s.cache.View(), a.d.Now()); stale {
		writeJSON(w, http.StatusServiceUnavailable, HealthResponse{Status: "unavailable", Reason: why})
		return
	}
	writeJSON(w, http.StatusOK, HealthResponse{Status: "ok"})
}

func (a *App) metrics(w http.ResponseWriter, s *site) {
	depth, oldest, err := s.cache.OutboxStats()
	if err != nil {
		a.log.Error("metrics: outbox", "error", err.Error())
		http.Error(w, "cache: "+err.Error(), http.StatusInternalServerError)
		return
	}
	now := a.d.Now()
	view := s.cache.View()
	stale, _ := gate.Staleness(view, now)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	g := gauges{view: view, outbox: depth, oldest: oldest, now: now, stale: stale, failing: s.cache.WriteFailure()}
	if a.d.Update != nil {
		u := a.d.Update()
		g.update = &u
	}
	if a.d.Sync != nil {
		sm := a.d.Sync()
		g.sync = &sm
	}
	g.version = a.d.Version
	_ = a.m.write(w, g)
}

func (a *App) status(w http.ResponseWriter, s *site) {
	depth, oldest, err := s.cache.OutboxStats()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, ErrorResponse{Error: "cache: " + err.Error()})
		return
	}
	now := a.d.Now()
	view := s.cache.View()
	counts := view.Counts()
	out := StatusResponse{
		EdgeID: a.cfg.EdgeID,
		Site:   SiteStatus{Mode: a.cfg.Site.Mode, OrgID: a.cfg.Site.OrgID, SiteID: a.cfg.Site.SiteID},
		Now:    now.UTC(),
		Seq:    view.Seq(),
		Outbox: OutboxStatus{Depth: depth},
		Cache:  CacheStatus{Visits: counts.Visits, Gates: counts.Gates, Keys: counts.Keys, People: counts.People},
		Gates:  []GateStatus{},
	}
	if t := view.SyncedAt(); !t.IsZero() {
		age := now.Sub(t).Seconds()
		out.LastSync, out.SyncAgeSeconds = &t, &age
	}
	if !oldest.IsZero() {
		out.Outbox.Oldest = &oldest
	}
	out.Stale, out.StaleReason = gate.Staleness(view, now)
	out.Hardware = a.hardwareStatus()
	s.hwMu.RLock()
	driven := s.hw.doc.Gates
	s.hwMu.RUnlock()
	for _, gc := range driven {
		gs := GateStatus{GateID: gc.ID, Direction: "unknown", WhenStale: string(gc.WhenStale), Readers: []string{}}
		if g, ok := view.Gate(gc.ID); ok {
			gs.Name, gs.Direction = g.Name, g.Direction
		}
		for _, r := range gc.Readers {
			gs.Readers = append(gs.Readers, describeReader(r))
		}
		if open, ok := a.m.doorOpen(gc.ID); ok {
			gs.DoorOpen = &open
		}
		out.Gates = append(out.Gates, gs)
	}
	if a.d.BrokerState != nil {
		if b, err := json.Marshal(a.d.BrokerState()); err == nil {
			out.Broker = b
		} else {
			out.Broker, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
	}
	if a.d.Update != nil {
		u := a.d.Update()
		out.Update = &u
	}
	writeJSON(w, http.StatusOK, out)
}

func describeReader(r hardware.Reader) string {
	switch r.Kind {
	case hardware.Serial:
		return "serial " + r.Device
	case hardware.TCP:
		return "tcp " + r.Listen
	}
	return r.Kind
}

// scan decides on the token in the body at the named gate, as a reader
// would, and answers with what it did: 200 for a decision (admitted or
// refused), 500 when the relay or the cache failed.
func (a *App) scan(w http.ResponseWriter, r *http.Request, s *site) {
	gateID := r.PathValue("gate_id")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxScanBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, ErrorResponse{Error: "the body is longer than any pass token"})
			return
		}
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Error: "reading the body: " + err.Error()})
		return
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Error: "the body must be the pass token"})
		return
	}
	// The scan holds the hardware as it is: a change waits for it.
	s.hwMu.RLock()
	g, ok := s.gate(gateID)
	if !ok {
		s.hwMu.RUnlock()
		writeJSON(w, http.StatusNotFound, ErrorResponse{Error: "no gate " + gateID + " is configured here"})
		return
	}
	res := g.Scan(r.Context(), text, a.d.Now())
	s.hwMu.RUnlock()
	a.m.observe(res)
	out := ScanResponse{GateID: res.GateID, Admitted: res.Admitted, Kind: string(res.Kind), Reason: res.Reason,
		VisitID: res.VisitID, PassVisitID: res.PassVisitID, PersonID: res.PersonID, Direction: res.Direction, Repeat: res.Repeat,
		FactID: res.FactID, DecisionMicros: res.Decision.Microseconds()}
	status := http.StatusOK
	if res.Err != nil {
		out.Error, status = res.Err.Error(), http.StatusInternalServerError
	}
	writeJSON(w, status, out)
}
