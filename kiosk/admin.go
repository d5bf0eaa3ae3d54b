package kiosk

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
)

// AdminHandler is the appliance's local side of the kiosk, for
// `svc-edge kiosk pair|list|revoke|pin|printer`: it answers requests from
// the appliance itself (a loopback address) only, whichever listener it is
// mounted on.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /kiosk/pairing-codes", s.adminCode)
	mux.HandleFunc("GET /kiosk/devices", s.adminList)
	mux.HandleFunc("POST /kiosk/devices/{device_id}/revoke", s.adminRevoke)
	mux.HandleFunc("POST /kiosk/devices/{device_id}/printer", s.adminPrinter)
	mux.HandleFunc("POST /kiosk/pin", s.adminPIN)
	mux.HandleFunc("GET /kiosk/pair", s.adminPairPage)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			adminJSON(w, http.StatusForbidden, AdminError{Error: "kiosk administration answers the appliance itself only"})
			return
		}
		// A browser on the appliance is a loopback client too: a page it
		// visits could POST a JSON body as text/plain (no preflight) or
		// load /kiosk/pair. svc-edge sends neither header; the local
		// pairing page is opened directly (none) or from its own links.
		if site := r.Header.Get("Sec-Fetch-Site"); r.Header.Get("Origin") != "" || (site != "" && site != "none" && site != "same-origin") {
			adminJSON(w, http.StatusForbidden, AdminError{Error: "kiosk administration takes no requests from web pages"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		mux.ServeHTTP(w, r)
	})
}

// AdminError is the local API's error body.
type AdminError struct {
	Error string `json:"error"`
}

// CodeRequest asks for a pairing code.
type CodeRequest struct {
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	Printer string `json:"printer,omitempty"`
}

// DeviceJSON is a paired device as the local API lists it.
type DeviceJSON struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Mode     string    `json:"mode"`
	Printer  string    `json:"printer,omitempty"`
	PairedAt time.Time `json:"paired_at"`
	LastSeen time.Time `json:"last_seen"`
}

func deviceJSON(d Device) DeviceJSON {
	return DeviceJSON{ID: d.ID, Name: d.Name, Mode: d.Mode, Printer: d.Printer, PairedAt: d.PairedAt, LastSeen: d.LastSeen}
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (s *Server) adminCode(w http.ResponseWriter, r *http.Request) {
	var in CodeRequest
	if err := decodeJSON(r, &in); err != nil {
		adminJSON(w, http.StatusBadRequest, AdminError{Error: "body: " + err.Error()})
		return
	}
	if in.Mode == "" {
		in.Mode = ModeVisitor
	}
	if in.Printer == "" {
		in.Printer = s.defaultPrinter()
	}
	c, err := s.cfg.Devices.NewCode(in.Name, in.Mode, in.Printer, s.cfg.Now())
	if err != nil {
		adminJSON(w, http.StatusUnprocessableEntity, AdminError{Error: err.Error()})
		return
	}
	adminJSON(w, http.StatusCreated, c)
}

func (s *Server) adminList(w http.ResponseWriter, r *http.Request) {
	out := []DeviceJSON{}
	for _, d := range s.cfg.Devices.List() {
		out = append(out, deviceJSON(d))
	}
	adminJSON(w, http.StatusOK, out)
}

func (s *Server) adminRevoke(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Devices.Revoke(r.PathValue("device_id"), s.cfg.Now())
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, ErrUnpaired) {
			status = http.StatusNotFound
		}
		adminJSON(w, status, AdminError{Error: err.Error()})
		return
	}
	s.mu.Lock()
	delete(s.reception, d.ID)
	delete(s.recent, d.ID)
	s.mu.Unlock()
	s.log.Info("kiosk: revoked", "device_id", d.ID, "name", d.Name)
	adminJSON(w, http.StatusOK, deviceJSON(d))
}

func (s *Server) adminPrinter(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Printer string `json:"printer"`
	}
	if err := decodeJSON(r, &in); err != nil {
		adminJSON(w, http.StatusBadRequest, AdminError{Error: "body: " + err.Error()})
		return
	}
	d, err := s.cfg.Devices.SetPrinter(r.PathValue("device_id"), in.Printer)
	switch {
	case errors.Is(err, ErrUnpaired):
		adminJSON(w, http.StatusNotFound, AdminError{Error: err.Error()})
	case err != nil:
		adminJSON(w, http.StatusUnprocessableEntity, AdminError{Error: err.Error()})
	default:
		adminJSON(w, http.StatusOK, deviceJSON(d))
	}
}

func (s *Server) adminPIN(w http.ResponseWriter, r *http.Request) {
	var in struct {
		PIN string `json:"pin"`
	}
	if err := decodeJSON(r, &in); err != nil {
		adminJSON(w, http.StatusBadRequest, AdminError{Error: "body: " + err.Error()})
		return
	}
	if err := s.cfg.Devices.SetPIN(in.PIN); err != nil {
		adminJSON(w, http.StatusUnprocessableEntity, AdminError{Error: err.Error()})
		return
	}
	adminJSON(w, http.StatusOK, struct{}{})
}

type pairCodeData struct {
	Code    string
	Mode    string
	Minutes int
	Kiosk   string // the kiosk's address, as the installer types it
}

// adminPairPage is the appliance's local pairing page: a screen or a
// browser on the appliance itself shows a fresh code, as svc-edge kiosk
// pair prints one.
func (s *Server) adminPairPage(w http.ResponseWriter, r *http.Request) {
	mode := r.URL.Query().Get("mode")
	if mode == "" {
		mode = ModeVisitor
	}
	name := "Paired from the appliance's page"
	c, err := s.cfg.Devices.NewCode(name, mode, s.defaultPrinter(), s.cfg.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := pairCodeData{Code: c.Code[:3] + "-" + c.Code[3:], Mode: mode, Minutes: int(PairingTTL / time.Minute)}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, nil, http.StatusOK, "paircode", &page{Data: d})
}
