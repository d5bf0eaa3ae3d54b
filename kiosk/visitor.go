package kiosk

import (
	"encoding/json"
	"errors"
	"github.com/svc-vms/svc/shared/textfold"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

func (s *Server) pairPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, nil, http.StatusOK, "pair", &page{})
}

func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	dev, cred, err := s.cfg.Devices.Pair(r.PostFormValue("code"), s.cfg.Now())
	if err != nil {
		status, msg := http.StatusBadRequest, "pair.bad_code"
		if !errors.Is(err, ErrBadCode) {
			s.log.Error("kiosk: pair", "error", err.Error())
			status, msg = http.StatusInternalServerError, "error.internal"
		}
		p := &page{}
		p.cat = s.language(r)
		p.Problem = p.T(msg)
		s.render(w, r, nil, status, "pair", p)
		return
	}
	s.log.Info("kiosk: paired", "device_id", dev.ID, "name", dev.Name, "mode", dev.Mode)
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: cred, Path: "/", MaxAge: 86400 * 3650,
		HttpOnly: true, Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode})
	next := "/"
	if dev.Mode == ModeReception {
		next = "/reception"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) welcome(w http.ResponseWriter, r *http.Request, rq *request) {
	if rq.dev.Mode == ModeReception {
		http.Redirect(w, r, "/reception", http.StatusSeeOther)
		return
	}
	s.render(w, r, rq, http.StatusOK, "welcome", &page{Idle: true})
}

// personJSON is a person as the search endpoint gives them: name and job
// title only.
type personJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	JobTitle string `json:"job_title,omitempty"`
}

// people searches people by name for the walk-in and Person questions;
// fewer than MinSearch letters find nobody.
func (s *Server) people(q string) []Person {
	q = strings.TrimSpace(q)
	if letters(q) < MinSearch || len(q) > 80 {
		return nil
	}
	return s.cfg.Store.SearchPeople(q, searchResults)
}

func letters(q string) int {
	n := 0
	for _, r := range q {
		if r != ' ' {
			n++
		}
	}
	return n
}

func (s *Server) searchPeople(w http.ResponseWriter, r *http.Request, rq *request) {
	out := []personJSON{}
	for _, p := range s.people(r.URL.Query().Get("q")) {
		out = append(out, personJSON(p))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// receiver is whom a walk-in comes to see, as the walk-in pages carry it
// in their query: "person:ID", "team:ID" or "desk".
type receiver struct {
	Kind string // person, team, desk
	ID   string
	Name string
}

func (rc receiver) String() string {
	if rc.Kind == "desk" {
		return "desk"
	}
	return rc.Kind + ":" + rc.ID
}

// receiverOf reads and checks the "to" parameter against the cache: a
// team must be one visitors may choose.
func (s *Server) receiverOf(v string) (receiver, bool) {
	kind, id, _ := strings.Cut(v, ":")
	switch kind {
	case "desk":
		return receiver{Kind: "desk"}, id == ""
	case "person":
		if p, ok := s.cfg.Store.Person(id); ok {
			return receiver{Kind: kind, ID: id, Name: p.Name}, true
		}
	case "team":
		if t, ok := s.cfg.Store.Team(id); ok && t.VisitorsCanChoose {
			return receiver{Kind: kind, ID: id, Name: t.Name}, true
		}
	}
	return receiver{}, false
}

type whoData struct {
	Query  string
	People []Person
	Teams  []Team
	Short  bool // a query too short to search
}

func (s *Server) walkInWho(w http.ResponseWriter, r *http.Request, rq *request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := whoData{Query: q, People: s.people(q), Short: q != "" && letters(q) < MinSearch}
	for _, t := range s.cfg.Store.Teams() {
		if t.VisitorsCanChoose {
			d.Teams = append(d.Teams, t)
		}
	}
	s.render(w, r, rq, http.StatusOK, "walkin_who", &page{Idle: true, Data: d})
}

type typeData struct {
	To    receiver
	Types []VisitType
}

func (s *Server) walkInType(w http.ResponseWriter, r *http.Request, rq *request) {
	to, ok := s.receiverOf(r.URL.Query().Get("to"))
	if !ok {
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	s.render(w, r, rq, http.StatusOK, "walkin_type", &page{Idle: true, Data: typeData{To: to, Types: s.cfg.Store.VisitTypes()}})
}

// walkIn is the sign-in as its pages carry it forward.
type walkIn struct {
	To        receiver
	Type      VisitType
	VisitID   string
	Name      string
	VisitorID string // a returning visitor's record, chosen by its masked contact
	Returning []Visitor
	Email     string
	Phone     string
	Company   string
	Form      any // the type's questions, rendered
	// FormAsksCompany: the type's form has a company question, which then
	// gives the visitor's company (asked once, not twice).
	FormAsksCompany bool
}

// walkInStart reads the receiver and type every later step carries.
func (s *Server) walkInStart(q url.Values) (walkIn, bool) {
	to, ok := s.receiverOf(q.Get("to"))
	if !ok {
		return walkIn{}, false
	}
	vt, ok := s.cfg.Store.VisitType(q.Get("type"))
	if !ok {
		return walkIn{}, false
	}
	return walkIn{To: to, Type: vt}, true
}

func (s *Server) walkInName(w http.ResponseWriter, r *http.Request, rq *request) {
	wi, ok := s.walkInStart(r.URL.Query())
	if !ok {
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	s.render(w, r, rq, http.StatusOK, "walkin_name", &page{Idle: true, Data: wi})
}

// walkInNamed looks the typed name up: a returning visitor chooses their
// record by its masked email or phone, or says they are new.
func (s *Server) walkInNamed(w http.ResponseWriter, r *http.Request, rq *request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	wi, ok := s.walkInStart(r.PostForm)
	if !ok {
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	wi.Name = strings.Join(strings.Fields(r.PostForm.Get("name")), " ")
	if wi.Name == "" {
		p := &page{Idle: true, Data: wi, Errors: map[string]string{"name": rq.cat.T("walkin.name_required")}}
		s.render(w, r, rq, http.StatusUnprocessableEntity, "walkin_name", p)
		return
	}
	if found := s.cfg.Store.Visitors(wi.Name, 5); len(found) > 0 {
		wi.Returning = found
		s.render(w, r, rq, http.StatusOK, "walkin_returning", &page{Idle: true, Data: wi})
		return
	}
	http.Redirect(w, r, detailsURL(wi, ""), http.StatusSeeOther)
}

func detailsURL(wi walkIn, visitorID string) string {
	q := url.Values{"to": {wi.To.String()}, "type": {wi.Type.Key}, "name": {wi.Name}}
	if visitorID != "" {
		q.Set("visitor_id", visitorID)
	}
	return "/walk-in/details?" + q.Encode()
}

// returningVisitor is the record the visitor chose, only if its name is
// the one typed: a record ID cannot be used to reach another's record.
func (s *Server) returningVisitor(name, id string) (Visitor, bool) {
	if id == "" || !ids.Valid(ids.Visitor, id) {
		return Visitor{}, false
	}
	for _, v := range s.cfg.Store.Visitors(name, 20) {
		if v.ID == id {
			return v, true
		}
	}
	return Visitor{}, false
}

func (s *Server) walkInDetails(w http.ResponseWriter, r *http.Request, rq *request) {
	q := r.URL.Query()
	wi, ok := s.walkInStart(q)
	if !ok {
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	wi.Name = strings.Join(strings.Fields(q.Get("name")), " ")
	if v, ok := s.returningVisitor(wi.Name, q.Get("visitor_id")); ok {
		wi.VisitorID, wi.Email, wi.Phone = v.ID, v.Email, v.Phone
	}
	wi.VisitID = ids.New(ids.Visit)
	wi.FormAsksCompany = s.formAsksCompany(wi.Type)
	wi.Form = s.renderForm(rq, wi.Type, nil, nil)
	s.render(w, r, rq, http.StatusOK, "walkin_details", &page{Idle: true, Data: wi})
}

// walkInSubmit signs the visitor in. The visit's ID was made when the
// form was shown, so a submit sent twice (a double tap, a retry after a
// dropped answer) makes one visit.
func (s *Server) walkInSubmit(w http.ResponseWriter, r *http.Request, rq *request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	wi, ok := s.walkInStart(f)
	if !ok || !ids.Valid(ids.Visit, f.Get("visit_id")) {
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	wi.VisitID = f.Get("visit_id")
	if _, taken := s.cfg.Store.Visit(wi.VisitID); taken && !s.mayShow(rq, wi.VisitID) {
		// Not a retry of this device's own submit (that one remembered the
		// visit): an ID copied from elsewhere, such as the sign-out
		// search's forms, which must not open another visitor's badge.
		http.Redirect(w, r, "/walk-in", http.StatusSeeOther)
		return
	}
	wi.Name = strings.Join(strings.Fields(f.Get("name")), " ")
	in := WalkIn{ID: wi.VisitID, At: rq.now, Type: wi.Type.Key, DeviceID: rq.dev.ID,
		Visitor: Visitor{Name: wi.Name, Company: strings.TrimSpace(f.Get("company"))}}
	if v, ok := s.returningVisitor(wi.Name, f.Get("visitor_id")); ok {
		wi.VisitorID, in.VisitorID = v.ID, v.ID
		in.Visitor.Email, in.Visitor.Phone = v.Email, v.Phone
	} else {
		in.Visitor.Email = strings.TrimSpace(f.Get("email"))
		in.Visitor.Phone = strings.Join(strings.Fields(f.Get("phone")), "")
	}
	wi.Email, wi.Phone, wi.Company = in.Visitor.Email, in.Visitor.Phone, in.Visitor.Company
	switch wi.To.Kind {
	case "person":
		in.HostID = wi.To.ID
	case "team":
		in.TeamID = wi.To.ID
	}
	answers, formErrs, ok := s.parseForm(rq, wi.Type, f)
	in.CustomFields = answers
	if wi.FormAsksCompany = s.formAsksCompany(wi.Type); wi.FormAsksCompany {
		var company string
		if json.Unmarshal(answers["company"], &company) == nil {
			in.Visitor.Company, wi.Company = strings.TrimSpace(company), strings.TrimSpace(company)
		}
	}
	var errs map[string]string
	status, problem := http.StatusUnprocessableEntity, ""
	if ok {
		v, err := s.cfg.Store.WalkIn(r.Context(), in)
		if err == nil {
			s.remember(rq.dev.ID, v.ID, rq.now)
			http.Redirect(w, r, "/visits/"+v.ID+"/done", http.StatusSeeOther)
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) {
			// Not saved (a full disk, a failing store): the form comes back
			// as typed, so a second try loses nothing, and reception is
			// there to sign the visitor in by hand.
			s.log.Error("kiosk: walk-in not saved", "device_id", rq.dev.ID, "visit_id", in.ID, "error", err.Error())
			status, problem = http.StatusServiceUnavailable, rq.cat.T("error.not_saved")
		}
		if ve != nil {
			errs = ve.Fields
			for field, msg := range ve.Fields {
				if k, ok := strings.CutPrefix(field, "custom_fields."); ok {
					formErrs = append(formErrs, form.FieldError{Field: k, Message: msg})
				}
			}
		}
	}
	wi.Form = s.renderForm(rq, wi.Type, f, formErrs)
	p := &page{Idle: true, Data: wi, Errors: errs, Problem: problem}
	if problem == "" && (len(errs) > 0 || len(formErrs) > 0) {
		p.Problem = rq.cat.T("error.check_fields")
	}
	s.render(w, r, rq, status, "walkin_details", p)
}

// remember lets a visitor-mode tablet show the badge of a visit it just
// signed in, and no other.
func (s *Server) remember(dev, visitID string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.recent[dev]
	if m == nil {
		m = map[string]time.Time{}
		s.recent[dev] = m
	}
	for id, until := range m {
		if !now.Before(until) {
			delete(m, id)
		}
	}
	m[visitID] = now.Add(badgeWindow)
}

// mayShow reports whether the device may show the visit's details: a
// desk may; a visitor tablet only for the visit it just signed in.
func (s *Server) mayShow(rq *request, visitID string) bool {
	if rq.reception {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.recent[rq.dev.ID][visitID]
	return ok && rq.now.Before(until)
}

type doneData struct {
	Visit    Visit
	Receiver string
	Jobs     []printJob
	Printer  bool
	// Reprint offers reception a second badge: the first was printed.
	Reprint bool
}

func (s *Server) visitFor(w http.ResponseWriter, r *http.Request, rq *request) (Visit, bool) {
	id := r.PathValue("visit_id")
	v, ok := s.cfg.Store.Visit(id)
	if !ok || !s.mayShow(rq, id) {
		s.notFound(w, r, rq)
		return Visit{}, false
	}
	return v, true
}

func receiverName(v Visit) string {
	switch {
	case v.Host != nil:
		return v.Host.Name
	case v.Team != nil:
		return v.Team.Name
	}
	return ""
}

func (s *Server) donePage(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	d := doneData{Visit: v, Receiver: receiverName(v), Printer: s.printerOf(rq.dev) != "" && s.cfg.Printer != nil}
	d.Reprint = d.Printer && rq.reception && s.printed(v.ID)
	s.render(w, r, rq, http.StatusOK, "done", &page{Idle: !rq.reception, Reception: rq.reception, Data: d})
}

type checkInData struct {
	Code    string
	Visit   *Visit
	Refused string // the refusal in plain words
}

func (s *Server) checkInPage(w http.ResponseWriter, r *http.Request, rq *request) {
	s.render(w, r, rq, http.StatusOK, "checkin", &page{Idle: true, Data: checkInData{}})
}

// checkIn is express check-in: a pass typed by a handheld reader, a photo
// of it from the tablet's camera, or the invitation's short code.
func (s *Server) checkIn(w http.ResponseWriter, r *http.Request, rq *request) {
	in, problem := s.checkInInput(w, r, rq)
	d := checkInData{Code: in.Code}
	if problem == "" {
		v, err := s.cfg.Store.CheckIn(r.Context(), in)
		var refused *RefusedError
		switch {
		case err == nil:
			s.remember(rq.dev.ID, v.ID, rq.now)
			http.Redirect(w, r, "/visits/"+v.ID+"/done", http.StatusSeeOther)
			return
		case errors.As(err, &refused):
			problem = rq.cat.T("reason." + refused.Reason)
		case errors.Is(err, ErrNotFound):
			problem = rq.cat.T("checkin.unknown")
		default:
			s.fail(w, r, rq, err)
			return
		}
	}
	d.Refused = problem
	s.render(w, r, rq, http.StatusUnprocessableEntity, "checkin", &page{Idle: true, Data: d})
}

// checkInInput reads a check-in's pass or code, decoding a photo on the
// appliance; problem is the message when there is nothing to check in
// with.
func (s *Server) checkInInput(w http.ResponseWriter, r *http.Request, rq *request) (in CheckIn, problem string) {
	in = CheckIn{At: rq.now, DeviceID: rq.dev.ID}
	r.Body = http.MaxBytesReader(w, r.Body, maxPhotoBody)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(maxPhotoBody); err != nil {
			return in, rq.cat.T("checkin.photo_too_big")
		}
		if fh, _, err := r.FormFile("photo"); err == nil {
			defer fh.Close()
			b, err := io.ReadAll(fh)
			if err != nil || len(b) == 0 || s.cfg.DecodeImage == nil {
				return in, rq.cat.T("checkin.photo_unreadable")
			}
			tok, err := s.cfg.DecodeImage(b)
			if err != nil {
				return in, rq.cat.T("checkin.photo_unreadable")
			}
			in.Token = tok
			return in, ""
		}
	} else if err := r.ParseForm(); err != nil {
		return in, rq.cat.T("checkin.nothing")
	}
	in.Token = strings.TrimSpace(r.FormValue("pass"))
	typed := strings.TrimSpace(r.FormValue("code"))
	if in.Token == "" && typed == "" {
		return in, rq.cat.T("checkin.nothing")
	}
	if in.Token == "" {
		code, ok := ids.NormalizeShortCode(typed)
		if !ok {
			in.Code = typed
			return in, rq.cat.T("checkin.bad_code")
		}
		in.Code = code
	}
	return in, ""
}

type signOutData struct {
	Query   string
	Results []Visit
	Short   bool
	Done    *Visit
}

// signOutPage finds the visitor's own visit by name; results show a short
// name, the time of arrival and whom they came to see, nothing stored.
func (s *Server) signOutPage(w http.ResponseWriter, r *http.Request, rq *request) {
	q := strings.Join(strings.Fields(r.URL.Query().Get("q")), " ")
	d := signOutData{Query: q, Short: q != "" && letters(q) < MinSearch}
	if letters(q) >= MinSearch {
		d.Results = matchOnSite(s.cfg.Store.OnSite(), q, searchResults)
	}
	s.render(w, r, rq, http.StatusOK, "signout", &page{Idle: true, Data: d})
}

// matchOnSite returns the checked-in visits whose visitor's name has a word
// starting with q.
func matchOnSite(vs []Visit, q string, limit int) []Visit {
	q = textfold.Fold(q)
	var out []Visit
	for _, v := range vs {
		name := textfold.Fold(v.Visitor.Name)
		if strings.HasPrefix(name, q) || strings.Contains(name, " "+q) {
			out = append(out, v)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// signOut checks out by a scanned badge or by the visit chosen from a
// name search.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, rq *request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.PostForm.Get("visit_id")
	if tok := strings.TrimSpace(r.PostForm.Get("pass")); tok != "" {
		v, ok := s.cfg.Store.VisitByPass(tok)
		if !ok {
			p := &page{Idle: true, Data: signOutData{}, Problem: rq.cat.T("signout.unknown_badge")}
			s.render(w, r, rq, http.StatusUnprocessableEntity, "signout", p)
			return
		}
		id = v.ID
	}
	v, err := s.cfg.Store.CheckOut(r.Context(), id, rq.desk())
	if err != nil {
		s.actionFailed(w, r, rq, err, "signout", signOutData{})
		return
	}
	s.render(w, r, rq, http.StatusOK, "signout", &page{Idle: true, Data: signOutData{Done: &v}})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, rq *request) {
	s.render(w, r, rq, http.StatusNotFound, "error", &page{Problem: rq.cat.T("error.not_found")})
}

// fail answers an error nobody at the desk can fix.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, rq *request, err error) {
	s.log.Error("kiosk: action failed", "device_id", rq.dev.ID, "path", r.URL.Path, "error", err.Error())
	s.render(w, r, rq, http.StatusInternalServerError, "error", &page{Problem: rq.cat.T("error.internal")})
}

// actionFailed shows a refused action on the page it came from.
func (s *Server) actionFailed(w http.ResponseWriter, r *http.Request, rq *request, err error, tmpl string, data any) {
	var st *StateError
	switch {
	case errors.As(err, &st):
		s.render(w, r, rq, http.StatusConflict, tmpl, &page{Idle: !rq.reception, Reception: rq.reception, Data: data,
			Problem: rq.cat.T("state."+stateKey(st), st.Status)})
	case errors.Is(err, ErrNotFound):
		s.notFound(w, r, rq)
	default:
		s.fail(w, r, rq, err)
	}
}
