package reader

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/svc-vms/svc/gate/qrdecode"
)

// Limits of Frames when its fields are zero.
const (
	// DefaultMaxFrame is the largest body accepted: a 1080p JPEG is a few
	// hundred kilobytes, a 12 MP photo a few megabytes.
	DefaultMaxFrame = 8 << 20
	// DefaultDecodes is how many frames are decoded at once.
	DefaultDecodes = 2
)

// Frames is the http.Handler of POST /gates/{gate_id}/frames: a camera
// posts a JPEG or PNG frame and the text of its QR code is delivered as a
// scan of that gate. Mount it on a pattern that names {gate_id}.
type Frames struct {
	gates   func(gateID string) bool
	deliver Deliver
	max     int64
	slots   chan struct{}
	log     *slog.Logger
	now     func() time.Time
}

// FramesConfig configures NewFrames.
type FramesConfig struct {
	// Gates reports whether a gate takes camera frames; others are 404.
	Gates   func(gateID string) bool
	Deliver Deliver
	// MaxBytes is the largest body accepted; 0 means DefaultMaxFrame.
	MaxBytes int64
	// Decodes is how many frames are decoded at once; 0 means
	// DefaultDecodes. A frame over it is answered 503 at once.
	Decodes int
	Logger  *slog.Logger
	Now     func() time.Time
}

// NewFrames returns the frames handler cfg describes.
func NewFrames(cfg FramesConfig) *Frames {
	h := &Frames{gates: cfg.Gates, deliver: cfg.Deliver, max: cfg.MaxBytes, log: cfg.Logger, now: cfg.Now}
	if h.max <= 0 {
		h.max = DefaultMaxFrame
	}
	if cfg.Decodes <= 0 {
		cfg.Decodes = DefaultDecodes
	}
	h.slots = make(chan struct{}, cfg.Decodes)
	if h.log == nil {
		h.log = slog.Default()
	}
	h.log = h.log.With("reader", "camera")
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

// FrameResponse is the body of a frame that held a code.
type FrameResponse struct {
	GateID  string `json:"gate_id"`
	Scanned bool   `json:"scanned"`
}

// FrameError is the body of every refused frame.
type FrameError struct {
	// Code is one of not_found, too_large, unsupported_media_type,
	// no_code, busy, bad_request.
	Code  string `json:"code"`
	Error string `json:"error"`
}

// ServeHTTP answers 200 with a FrameResponse once the scan was delivered
// (Deliver has returned), or a FrameError: 404 for a gate without a
// camera, 413 for a body over the limit, 415 for one that is not PNG or
// JPEG, 422 when the frame holds no readable QR code, 503 when as many
// frames as allowed are being decoded.
func (h *Frames) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gateID := r.PathValue("gate_id")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, FrameError{"method_not_allowed", "frames are POSTed"})
		return
	}
	if gateID == "" || h.gates == nil || !h.gates(gateID) {
		writeJSON(w, http.StatusNotFound, FrameError{"not_found", "no gate with a camera has this ID"})
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		writeJSON(w, http.StatusServiceUnavailable, FrameError{"busy", "frames are being decoded; send the next one"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.max))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, FrameError{"too_large", err.Error()})
			return
		}
		writeJSON(w, http.StatusBadRequest, FrameError{"bad_request", "reading the frame: " + err.Error()})
		return
	}
	at := h.now()
	text, err := qrdecode.DecodeBytes(body)
	switch {
	case errors.Is(err, qrdecode.ErrNoCode):
		writeJSON(w, http.StatusUnprocessableEntity, FrameError{"no_code", "no QR code found in the frame"})
		return
	case errors.Is(err, qrdecode.ErrTooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, FrameError{"too_large", err.Error()})
		return
	case errors.Is(err, qrdecode.ErrFormat):
		writeJSON(w, http.StatusUnsupportedMediaType, FrameError{"unsupported_media_type", err.Error()})
		return
	case err != nil:
		h.log.Error("frame not decoded", "gate_id", gateID, "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, FrameError{"internal", "the frame could not be decoded"})
		return
	}
	h.deliver(r.Context(), gateID, text, at)
	writeJSON(w, http.StatusOK, FrameResponse{GateID: gateID, Scanned: true})
}

// writeJSON writes v as the response's JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to tell it
}
