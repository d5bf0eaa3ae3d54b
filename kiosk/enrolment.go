package kiosk

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"
)

// EnrolmentRefresh is how often the enrolment page asks the appliance
// again: about the cloud's poll interval, so a tablet shows a new code,
// and the pairing page once the appliance runs, within seconds.
const EnrolmentRefresh = 5 * time.Second

// Enrolment is where the appliance's enrolment stands, as the kiosk shows
// it while the appliance is not enrolled (docs/decisions.md, "Enrolment
// (issue 17)").
type Enrolment struct {
	// Code is the one-time code, XXXX-XXXX, while an installer may claim
	// it; "" before the cloud gave one and once it is claimed.
	Code string
	// ExpiresAt is the code's end.
	ExpiresAt time.Time
	// Claimed is set once an installer claimed the code: the appliance is
	// collecting its configuration.
	Claimed bool
	// Cloud is the cloud's URL the appliance enrols with.
	Cloud string
	// Skew is the appliance's clock minus the cloud's; SkewWarning is set
	// when it is over the cloud's tolerance.
	Skew        time.Duration
	SkewWarning bool
	// Problem is the last failure to reach the cloud, which the appliance
	// retries; "" when the last request went through.
	Problem string
}

// EnrolmentConfig is what EnrolmentHandler needs.
type EnrolmentConfig struct {
	// Status says where the enrolment stands; it is called for each page.
	Status func() Enrolment
	// Languages are the catalogues offered, as Config.Languages.
	Languages []string
	// Secure marks the language cookie Secure (served over TLS).
	Secure bool
	Now    func() time.Time
	Logger *slog.Logger
}

// EnrolmentHandler is what the kiosk's listener serves while the
// appliance is not enrolled: every page is one saying so, with the
// enrolment code, its expiry and a clock warning, from the kiosk's own
// templates and catalogues. It needs no store: the appliance has no site
// yet. The page asks again every EnrolmentRefresh and, once the appliance
// runs and serves the kiosk in its place, the browser lands on the
// pairing page by itself.
func EnrolmentHandler(cfg EnrolmentConfig) (http.Handler, error) {
	if cfg.Status == nil {
		return nil, errors.New("kiosk: no enrolment status")
	}
	s, err := newServer(Config{Languages: cfg.Languages, Secure: cfg.Secure, Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	mux := s.openMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) { s.enrolmentPage(w, r, cfg.Status()) })
	return s.guard(mux), nil
}

// enrolmentView is the enrolment page's data.
type enrolmentView struct {
	Enrolment
	Until       string // the code's end, hh:mm UTC
	MinutesLeft int    // whole minutes, rounded up
	SkewSeconds int    // the skew's size, in seconds
}

// enrolmentPage answers 503: the kiosk is not in service yet, and a
// client that honours Retry-After asks again when the page would.
func (s *Server) enrolmentPage(w http.ResponseWriter, r *http.Request, en Enrolment) {
	now := s.cfg.Now()
	v := enrolmentView{Enrolment: en, SkewSeconds: int(math.Round(math.Abs(en.Skew.Seconds())))}
	if left := en.ExpiresAt.Sub(now); en.Code != "" && left > 0 {
		v.Until = en.ExpiresAt.UTC().Format("15:04")
		v.MinutesLeft = int((left + time.Minute - 1) / time.Minute)
	} else {
		v.Code = "" // expired: the appliance is asking for another
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(int(EnrolmentRefresh/time.Second)))
	s.render(w, r, nil, http.StatusServiceUnavailable, "enrolment", &page{Data: v, Refresh: int(EnrolmentRefresh / time.Second)})
}
