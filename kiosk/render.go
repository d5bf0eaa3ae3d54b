package kiosk

import (
	"bytes"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// page is what every template gets. Texts come through T, from the
// request's catalogue.
type page struct {
	cat       *Catalogue
	Langs     []*Catalogue
	Path      string // this page's path and query, for the language switch
	Reception bool   // the page is a desk page
	Idle      bool   // visitor screens return to the welcome screen when left alone
	Sync      SyncState
	Site      Site
	Device    Device
	Errors    map[string]string // field → message
	Problem   string            // a message for the whole page
	Data      any

	// Refresh, in seconds, makes the page ask the appliance again that
	// often and reload once it answers (kiosk.js), or reload outright
	// without script: for a page that waits on the appliance.
	Refresh int
}

// T returns the catalogue's text for key.
func (p *page) T(key string, args ...any) string { return p.cat.T(key, args...) }

// Lang is the page's language tag.
func (p *page) Lang() string { return p.cat.Lang }

// render writes template name with data; a template error is logged and
// answered 500 without the half-written page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, rq *request, status int, name string, p *page) {
	t, ok := s.tmpl[name]
	if !ok {
		s.log.Error("kiosk: no template", "template", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if rq != nil {
		p.cat, p.Device = rq.cat, rq.dev
		p.Sync = s.cfg.Store.Sync()
		p.Site = s.cfg.Store.Site()
	} else {
		p.cat = s.language(r)
	}
	p.Langs, p.Path = s.langs, r.URL.RequestURI()
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		s.log.Error("kiosk: render", "template", name, "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Mask shows an email or phone number so its owner knows it and nobody
// else learns it: "a•••@example.com", "+44•••••••89".
func Mask(s string) string {
	if s == "" {
		return ""
	}
	if local, domain, ok := strings.Cut(s, "@"); ok {
		r, _ := utf8.DecodeRuneInString(local)
		return string(r) + "•••@" + domain
	}
	n := utf8.RuneCountInString(s)
	if n <= 5 {
		return strings.Repeat("•", n)
	}
	rs := []rune(s)
	return string(rs[:3]) + strings.Repeat("•", n-5) + string(rs[n-2:])
}

// shortName is how a visitor's name shows in lists a visitor can see:
// their first name and the initial of their last.
func shortName(name string) string {
	f := strings.Fields(name)
	switch len(f) {
	case 0:
		return ""
	case 1:
		return f[0]
	}
	r, _ := utf8.DecodeRuneInString(f[len(f)-1])
	return f[0] + " " + string(r) + "."
}

// hhmm is a time of day at the site.
func hhmm(t *time.Time, site Site) string {
	if t == nil {
		return ""
	}
	if site.Location != nil {
		return t.In(site.Location).Format("15:04")
	}
	return t.Format("15:04")
}
