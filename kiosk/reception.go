package kiosk

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"
)

func stateKey(st *StateError) string {
	switch st.Action {
	case "check_in", "check_out", "take", "hand_over":
		return st.Action
	}
	return "other"
}

func (s *Server) pinPage(w http.ResponseWriter, r *http.Request, rq *request) {
	if rq.reception {
		http.Redirect(w, r, "/reception", http.StatusSeeOther)
		return
	}
	p := &page{Idle: true}
	if !s.cfg.Devices.HasPIN() {
		p.Problem = rq.cat.T("pin.none")
	}
	s.render(w, r, rq, http.StatusOK, "pin", p)
}

// pin opens reception on a visitor-mode tablet until it is locked or left
// alone for receptionIdle.
func (s *Server) pin(w http.ResponseWriter, r *http.Request, rq *request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	err := s.cfg.Devices.CheckPIN(rq.dev.ID, r.PostFormValue("pin"), rq.now)
	if err != nil {
		key := "pin.wrong"
		switch {
		case errors.Is(err, ErrLocked):
			key = "pin.locked"
		case errors.Is(err, ErrNoPIN):
			key = "pin.none"
		case !errors.Is(err, ErrBadPIN):
			s.fail(w, r, rq, err)
			return
		}
		s.render(w, r, rq, http.StatusForbidden, "pin", &page{Idle: true, Problem: rq.cat.T(key)})
		return
	}
	s.mu.Lock()
	s.reception[rq.dev.ID] = rq.now.Add(receptionIdle)
	s.mu.Unlock()
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}

func (s *Server) lock(w http.ResponseWriter, r *http.Request, rq *request) {
	s.mu.Lock()
	delete(s.reception, rq.dev.ID)
	s.mu.Unlock()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// waiting is a visit in the queue with how long it has waited.
type waiting struct {
	Visit   Visit
	Minutes int
	Overdue bool
}

type receptionData struct {
	Queue  []waiting
	OnSite []Visit
	Jobs   []PrintJob
	Limit  int // minutes
}

func (s *Server) waitLimit() time.Duration {
	if l := s.cfg.Store.Site().WaitLimit; l > 0 {
		return l
	}
	return 10 * time.Minute
}

func (s *Server) receptionPage(w http.ResponseWriter, r *http.Request, rq *request) {
	limit := s.waitLimit()
	d := receptionData{OnSite: s.cfg.Store.OnSite(), Limit: int(limit / time.Minute)}
	for _, v := range s.cfg.Store.Waiting() {
		waited := rq.now.Sub(v.WaitingSince)
		d.Queue = append(d.Queue, waiting{Visit: v, Minutes: int(waited / time.Minute), Overdue: waited >= limit})
	}
	if s.cfg.Printer != nil {
		d.Jobs = s.cfg.Printer.Jobs()
	}
	s.render(w, r, rq, http.StatusOK, "reception", &page{Reception: true, Data: d})
}

// evacuationList is everyone on site, to print: it needs nothing but the
// appliance, so it prints while the site is offline.
func (s *Server) evacuationList(w http.ResponseWriter, r *http.Request, rq *request) {
	site := s.cfg.Store.Site()
	d := evacuation{Visits: s.cfg.Store.OnSite(), At: hhmm(&rq.now, site)}
	s.render(w, r, rq, http.StatusOK, "evacuation", &page{Reception: true, Data: d})
}

type evacuation struct {
	Visits []Visit
	At     string
}

type takeData struct {
	Visit  Visit
	Query  string
	People []Person
	Short  bool
}

func (s *Server) deskVisit(w http.ResponseWriter, r *http.Request, rq *request) (Visit, bool) {
	v, ok := s.cfg.Store.Visit(r.PathValue("visit_id"))
	if !ok {
		s.notFound(w, r, rq)
	}
	return v, ok
}

func (s *Server) takePage(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.deskVisit(w, r, rq)
	if !ok {
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := takeData{Visit: v, Query: q, People: s.people(q), Short: q != "" && letters(q) < MinSearch}
	s.render(w, r, rq, http.StatusOK, "take", &page{Reception: true, Data: d})
}

// take gives a waiting visit its host.
func (s *Server) take(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.deskVisit(w, r, rq)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	if _, err := s.cfg.Store.Take(r.Context(), v.ID, r.PostFormValue("person_id"), rq.now); err != nil {
		s.actionFailed(w, r, rq, err, "take", takeData{Visit: v})
		return
	}
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}

type handOverData struct {
	Visit  Visit
	Query  string
	People []Person
	Teams  []Team
	Short  bool
}

func (s *Server) handOverPage(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.deskVisit(w, r, rq)
	if !ok {
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := handOverData{Visit: v, Query: q, People: s.people(q), Teams: s.cfg.Store.Teams(), Short: q != "" && letters(q) < MinSearch}
	p := &page{Reception: true, Data: d}
	if v.Host != nil {
		p.Problem = rq.cat.T("state.hand_over", v.Status)
	}
	s.render(w, r, rq, http.StatusOK, "handover", p)
}

// handOver passes a visit nobody has taken, with the API's rule: a visit
// with a host is refused, and the page says why.
func (s *Server) handOver(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.deskVisit(w, r, rq)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	to := Receiver{To: r.PostFormValue("to")}
	kind, id, _ := strings.Cut(to.To, ":")
	switch kind {
	case "person":
		to.To, to.PersonID = "person", id
	case "team":
		to.To, to.TeamID = "team", id
	case "reception":
	default:
		http.Error(w, "bad receiver", http.StatusBadRequest)
		return
	}
	if _, err := s.cfg.Store.HandOver(r.Context(), v.ID, to, rq.now); err != nil {
		s.actionFailed(w, r, rq, err, "handover", handOverData{Visit: v, Teams: s.cfg.Store.Teams()})
		return
	}
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}

func (s *Server) checkOut(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.deskVisit(w, r, rq)
	if !ok {
		return
	}
	if _, err := s.cfg.Store.CheckOut(r.Context(), v.ID, rq.now); err != nil {
		var st *StateError
		if errors.As(err, &st) {
			d := receptionData{OnSite: s.cfg.Store.OnSite()}
			s.render(w, r, rq, http.StatusConflict, "reception", &page{Reception: true, Data: d, Problem: rq.cat.T("state."+stateKey(st), st.Status)})
			return
		}
		s.actionFailed(w, r, rq, err, "reception", receptionData{})
		return
	}
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}

// badge renders the visit's badge for the kiosk's label.
func (s *Server) badge(rq *request, v Visit) ([]byte, error) {
	if s.cfg.Badges == nil {
		return nil, errors.New("kiosk: no badge renderer")
	}
	site := s.cfg.Store.Site()
	at := rq.now
	if v.CheckedInAt != nil {
		at = *v.CheckedInAt
	}
	if site.Location != nil {
		at = at.In(site.Location)
	}
	vt, _ := s.cfg.Store.VisitType(v.Type)
	name := vt.Name
	if name == "" {
		name = v.Type
	}
	return s.cfg.Badges.Render(Badge{VisitorName: v.Visitor.Name, Company: v.Visitor.Company, Receiver: receiverName(v),
		Date: at.Format("2006-01-02"), VisitType: name, Pass: v.Pass, SiteName: site.Name, Logo: site.Logo}, s.cfg.Label)
}

func (s *Server) badgePNG(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	png, err := s.badge(rq, v)
	if err != nil {
		s.fail(w, r, rq, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	http.ServeContent(w, r, "badge.png", time.Time{}, bytes.NewReader(png))
}

// badgePrintPage is the browser's print dialog fallback: the badge alone,
// sized to the label.
func (s *Server) badgePrintPage(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	s.render(w, r, rq, http.StatusOK, "badge", &page{Data: v})
}

// printBadge sends the badge to the device's printer. The job's ID is the
// visit's, so a second tap, or a retry after the printer refused, prints
// one badge, not two.
func (s *Server) printBadge(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	d := doneData{Visit: v, Receiver: receiverName(v), Printer: rq.dev.Printer != "" && s.cfg.Printer != nil}
	if !d.Printer {
		http.Redirect(w, r, "/visits/"+v.ID+"/badge", http.StatusSeeOther)
		return
	}
	png, err := s.badge(rq, v)
	if err != nil {
		s.fail(w, r, rq, err)
		return
	}
	jobID := "badge-" + v.ID
	if r.PostFormValue("reprint") != "" {
		jobID += "-" + rq.now.UTC().Format("20060102T150405")
	}
	job, err := s.cfg.Printer.Print(r.Context(), jobID, rq.dev.Printer, png, s.cfg.Label)
	p := &page{Idle: !rq.reception, Reception: rq.reception, Data: d}
	switch {
	case err != nil:
		p.Problem = rq.cat.T("print.failed", err.Error())
	case job.State == "failed":
		p.Problem = rq.cat.T("print.failed", job.Error)
	default:
		p.Data = doneData{Visit: v, Receiver: d.Receiver, Printer: true, Jobs: []PrintJob{job}}
	}
	status := http.StatusOK
	if p.Problem != "" {
		status = http.StatusBadGateway
	}
	s.render(w, r, rq, status, "done", p)
}

func (s *Server) retryPrint(w http.ResponseWriter, r *http.Request, rq *request) {
	if s.cfg.Printer == nil {
		s.notFound(w, r, rq)
		return
	}
	if _, err := s.cfg.Printer.Retry(r.Context(), r.PathValue("job_id")); err != nil {
		s.log.Warn("kiosk: print retry", "job_id", r.PathValue("job_id"), "error", err.Error())
	}
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}
