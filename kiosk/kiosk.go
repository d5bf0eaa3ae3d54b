// Package kiosk is the reception web app the site appliance serves on its
// LAN: pairing, the visitor screens (walk-in sign-in, express check-in,
// sign-out) and reception (the waiting queue, hand-over, who is on site,
// badges). Pages are rendered on the server with html/template from
// embedded templates; every word comes from a message catalogue; the
// little JavaScript there is only improves what works without it.
//
// It reads and writes through Store, which the edge implements on its
// cache, so it keeps working while the site is offline.
//
// It may import the standard library, shared/*, gate/qrdecode (camera
// photos are decoded on the appliance) and the kiosk/* packages; never the
// edge, bbolt or the sync protocol (the edge mounts the kiosk, not the
// other way round).
package kiosk

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/kiosk/formview"
	"github.com/svc-vms/svc/kiosk/printer"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Limits of the kiosk's inputs.
const (
	maxFormBody  = 64 << 10 // a sign-in with its answers
	maxPhotoBody = 8 << 20  // a tablet camera's photo of a pass
	// MinSearch is the fewest letters a person search needs: a visitor
	// never gets a list of all staff.
	MinSearch = 2
	// searchResults is the most people a search shows.
	searchResults = 8
	// receptionIdle ends a PIN-opened reception session on a visitor-mode
	// tablet left alone.
	receptionIdle = 5 * time.Minute
	// badgeWindow is how long a visitor-mode tablet may show the badge of
	// a visit it just signed in (a public tablet shows no other).
	badgeWindow = 10 * time.Minute
)

// Cookie names.
const (
	deviceCookie = "svc_kiosk"
	langCookie   = "svc_kiosk_lang"
)

// Config is what a Server needs.
type Config struct {
	Store   Store
	Devices *Devices
	// Languages are the catalogues offered, the site's default first; at
	// most two (English and one more). Empty: English only.
	Languages []string
	// Printer is the queue of badges on their way to the devices' label
	// printers; nil leaves the browser's print dialog only.
	Printer *printer.Queue
	// Label is the label badges are rendered for ("62x100" when empty).
	Label string
	// DefaultPrinter is the printer of devices paired without one ("" for
	// none): the demo's simulated printer.
	DefaultPrinter string
	// DecodeImage reads a pass's QR from a camera photo.
	DecodeImage func(b []byte) (string, error)
	// Secure marks cookies Secure (the kiosk is served over TLS).
	Secure bool
	Now    func() time.Time
	Logger *slog.Logger
}

// Server serves the kiosk.
type Server struct {
	cfg Config
	// printing is the label badges are rendered for and the printer of
	// devices paired without one, which SetPrinting changes while the
	// kiosk serves.
	printing atomic.Pointer[printing]
	cats     Catalogues
	langs    []*Catalogue
	tmpl     map[string]*template.Template
	log      *slog.Logger
	forms    forms

	mu        sync.Mutex
	reception map[string]time.Time            // device → end of its PIN-opened session
	recent    map[string]map[string]time.Time // device → visits it signed in → until
}

// New checks cfg and parses the templates.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("kiosk: no store")
	case cfg.Devices == nil:
		return nil, errors.New("kiosk: no device registry")
	}
	if cfg.Label == "" {
		cfg.Label = "62x100"
	}
	label, ok := badge.LabelByName(cfg.Label)
	if !ok {
		return nil, fmt.Errorf("kiosk: label %q is not one of the badge labels", cfg.Label)
	}
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	s.printing.Store(&printing{label: label, printer: cfg.DefaultPrinter})
	return s, nil
}

// newServer is what every kiosk handler needs, with or without a store:
// cfg's defaults, the languages' catalogues and the templates.
func newServer(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cats, err := LoadCatalogues()
	if err != nil {
		return nil, err
	}
	if len(cfg.Languages) == 0 {
		cfg.Languages = []string{"en"}
	}
	if len(cfg.Languages) > 2 {
		return nil, fmt.Errorf("kiosk: %d languages; a kiosk offers English and at most one more", len(cfg.Languages))
	}
	s := &Server{cfg: cfg, cats: cats, log: cfg.Logger, reception: map[string]time.Time{}, recent: map[string]map[string]time.Time{}}
	def, _ := badge.LabelByName("62x100")
	s.printing.Store(&printing{label: def, printer: cfg.DefaultPrinter}) // New sets the configured label
	for _, l := range cfg.Languages {
		c, ok := cats[l]
		if !ok {
			return nil, fmt.Errorf("kiosk: no catalogue for language %q (have %s)", l, strings.Join(slices.Sorted(maps.Keys(cats)), ", "))
		}
		if slices.Contains(s.langs, c) {
			return nil, fmt.Errorf("kiosk: language %q given twice", l)
		}
		s.langs = append(s.langs, c)
	}
	if len(s.langs) == 2 && s.langs[0].Lang != "en" && s.langs[1].Lang != "en" {
		return nil, errors.New("kiosk: one of the two languages must be English")
	}
	if s.tmpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	return s, nil
}

// printing is what SetPrinting sets.
type printing struct {
	label   badge.Label
	printer string
}

// SetPrinting changes, while the kiosk serves, the label badges are
// rendered for (a name of badge.LabelByName; "" for 62x100) and the
// printer of devices paired without one ("" for none), as the appliance's
// hardware from the cloud says them. It returns an error, changing
// nothing, for a label that is no badge label.
func (s *Server) SetPrinting(label, printer string) error {
	if label == "" {
		label = "62x100"
	}
	l, ok := badge.LabelByName(label)
	if !ok {
		return fmt.Errorf("kiosk: label %q is not one of the badge labels", label)
	}
	s.printing.Store(&printing{label: l, printer: printer})
	return nil
}

// label is the label badges are rendered for now.
func (s *Server) label() badge.Label { return s.printing.Load().label }

// defaultPrinter is the printer of devices paired without one, now.
func (s *Server) defaultPrinter() string { return s.printing.Load().printer }

// DefaultPrinter is the printer of devices paired without one, as
// SetPrinting last set it; "" for none.
func (s *Server) DefaultPrinter() string { return s.defaultPrinter() }

// printerOf is the printer a device prints on: its own, or the kiosk's
// default printer now; "" for none.
func (s *Server) printerOf(d Device) string {
	if d.Printer != "" {
		return d.Printer
	}
	return s.defaultPrinter()
}

var templateFuncs = template.FuncMap{
	"mask":      Mask,
	"shortName": shortName,
	"hhmm":      hhmm,
}

// parseTemplates parses each page with the layout: one template set per
// page, so each page's "content" block is its own.
func parseTemplates() (map[string]*template.Template, error) {
	pages, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/_*.html", p)
		if err != nil {
			return nil, fmt.Errorf("kiosk: template %s: %w", p, err)
		}
		out[name] = t
	}
	return out, nil
}

// Handler is the kiosk on the LAN: pairing is open, everything else needs
// a paired device.
func (s *Server) Handler() http.Handler {
	mux := s.openMux()
	mux.HandleFunc("GET /pair", s.pairPage)
	mux.HandleFunc("POST /pair", s.pair)

	paired := func(pattern string, h func(http.ResponseWriter, *http.Request, *request)) {
		mux.Handle(pattern, s.device(h, false))
	}
	desk := func(pattern string, h func(http.ResponseWriter, *http.Request, *request)) {
		mux.Handle(pattern, s.device(h, true))
	}
	paired("GET /{$}", s.welcome)
	paired("GET /people", s.searchPeople)
	paired("GET /walk-in", s.walkInWho)
	paired("GET /walk-in/type", s.walkInType)
	paired("GET /walk-in/name", s.walkInName)
	paired("POST /walk-in/name", s.walkInNamed)
	paired("GET /walk-in/details", s.walkInDetails)
	paired("POST /walk-in", s.walkInSubmit)
	paired("GET /check-in", s.checkInPage)
	paired("POST /check-in", s.checkIn)
	paired("GET /sign-out", s.signOutPage)
	paired("POST /sign-out", s.signOut)
	paired("GET /visits/{visit_id}/done", s.donePage)
	paired("GET /visits/{visit_id}/badge.png", s.badgePNG)
	paired("GET /visits/{visit_id}/badge", s.badgePrintPage)
	paired("POST /visits/{visit_id}/print", s.printBadge)
	paired("GET /reception/pin", s.pinPage)
	paired("POST /reception/pin", s.pin)
	desk("GET /reception", s.receptionPage)
	desk("POST /reception/lock", s.lock)
	desk("GET /reception/on-site/print", s.evacuationList)
	desk("GET /reception/visits/{visit_id}/take", s.takePage)
	desk("POST /reception/visits/{visit_id}/take", s.take)
	desk("GET /reception/visits/{visit_id}/hand-over", s.handOverPage)
	desk("POST /reception/visits/{visit_id}/hand-over", s.handOver)
	desk("POST /reception/visits/{visit_id}/check-out", s.checkOut)
	desk("POST /reception/print-jobs/{job_id}/retry", s.retryPrint)
	return s.guard(mux)
}

// openMux serves what any browser may fetch: the static assets and the
// language switch.
func (s *Server) openMux() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	mux.Handle("GET /static/form/", http.StripPrefix("/static/form/", cacheStatic(http.FileServerFS(formview.Assets))))
	mux.HandleFunc("POST /lang", s.setLang)
	return mux
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// guard sets the headers every response carries and refuses a
// cross-site POST: the device cookie is SameSite=Strict, and a POST whose
// Origin is another site's is refused before any handler runs.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o != "" && o != "null" {
				u, err := url.Parse(o)
				if err != nil || u.Host != r.Host {
					http.Error(w, "cross-site request refused", http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// request is what every paired page gets: the device, its language and
// whether reception is open on it.
type request struct {
	dev       Device
	cat       *Catalogue
	reception bool
	now       time.Time
}

// device authenticates the browser's cookie. An unpaired browser gets the
// pairing page (GET) or 401 (anything else); desk pages also need
// reception: a reception device, or a visitor device opened with the PIN.
func (s *Server) device(h func(http.ResponseWriter, *http.Request, *request), desk bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.cfg.Now()
		c, err := r.Cookie(deviceCookie)
		var dev Device
		if err == nil {
			dev, err = s.cfg.Devices.Authenticate(c.Value, now)
		}
		if err != nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/pair", http.StatusSeeOther)
				return
			}
			http.Error(w, ErrUnpaired.Error(), http.StatusUnauthorized)
			return
		}
		rq := &request{dev: dev, cat: s.language(r), now: now}
		rq.reception = dev.Mode == ModeReception || s.receptionOpen(dev.ID, now)
		if desk && !rq.reception {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/reception/pin", http.StatusSeeOther)
				return
			}
			http.Error(w, "reception is locked", http.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r, rq)
	})
}

// desk is who acts and when, for the store.
func (rq *request) desk() Desk { return Desk{DeviceID: rq.dev.ID, At: rq.now} }

func (s *Server) receptionOpen(dev string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.reception[dev]
	if !ok || !now.Before(until) {
		delete(s.reception, dev)
		return false
	}
	s.reception[dev] = now.Add(receptionIdle)
	return true
}

// language is the catalogue the browser chose, else the site's default.
func (s *Server) language(r *http.Request) *Catalogue {
	if c, err := r.Cookie(langCookie); err == nil {
		for _, l := range s.langs {
			if l.Lang == c.Value {
				return l
			}
		}
	}
	return s.langs[0]
}

func (s *Server) setLang(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	lang := r.PostFormValue("lang")
	for _, l := range s.langs {
		if l.Lang == lang {
			http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: "/", MaxAge: 86400 * 365,
				HttpOnly: true, Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode})
		}
	}
	back := r.PostFormValue("back")
	// url.Parse refuses control characters: a browser drops a tab or a
	// newline from a URL, so "/\t/evil.example" would be "//evil.example".
	if u, err := url.Parse(back); err != nil || u.Scheme != "" || u.Host != "" ||
		!strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.Contains(back, "\\") {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
