package kiosk

import (
	"bytes"
	"errors"

	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/kiosk/printer"
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

// row is a visit as a desk list shows it, its texts made in Go once per
// row: the lists hold hundreds of rows, and a template's method calls
// (through reflection) per row were most of the page's time.
type row struct {
	ID      string
	Name    string
	Company string
	For     string // the host, the team, or reception
	Since   string // arrived, HH:MM at the site
	Waited  string // "12 min"
	Overdue bool
	// The accessible names of the row's buttons: "Check out Ada Lovelace".
	CheckOutWho, BadgeWho string
}

func (s *Server) row(rq *request, site Site, v Visit) row {
	r := row{ID: v.ID, Name: v.Visitor.Name, Company: v.Visitor.Company, Since: hhmm(v.CheckedInAt, site),
		CheckOutWho: rq.cat.T("reception.check_out_who", v.Visitor.Name), BadgeWho: rq.cat.T("reception.badge_who", v.Visitor.Name)}
	switch {
	case v.Host != nil:
		r.For = v.Host.Name
	case v.Receiver != nil && v.Receiver.Name != "":
		r.For = v.Receiver.Name
	case v.WaitsWith == "" && v.Team != nil:
		r.For = v.Team.Name
	default:
		r.For = rq.cat.T("reception.desk")
	}
	return r
}

type receptionData struct {
	Queue  []row
	OnSite []row
	Jobs   []printJob
	Limit  int // minutes
}

func (s *Server) waitLimit(site Site) time.Duration {
	if site.WaitLimit > 0 {
		return site.WaitLimit
	}
	return 10 * time.Minute
}

func (s *Server) receptionPage(w http.ResponseWriter, r *http.Request, rq *request) {
	site := s.cfg.Store.Site()
	limit := s.waitLimit(site)
	d := receptionData{Limit: int(limit / time.Minute)}
	for _, v := range s.cfg.Store.Waiting() {
		waited := rq.now.Sub(v.WaitingSince)
		x := s.row(rq, site, v)
		x.Waited, x.Overdue = rq.cat.T("reception.minutes", int(waited/time.Minute)), waited >= limit
		d.Queue = append(d.Queue, x)
	}
	for _, v := range s.cfg.Store.OnSite() {
		d.OnSite = append(d.OnSite, s.row(rq, site, v))
	}
	d.Jobs = s.pendingJobs(rq)
	s.render(w, r, rq, http.StatusOK, "reception", &page{Reception: true, Data: d})
}

// evacuationList is everyone on site, to print: it needs nothing but the
// appliance, so it prints while the site is offline.
func (s *Server) evacuationList(w http.ResponseWriter, r *http.Request, rq *request) {
	site := s.cfg.Store.Site()
	d := evacuation{At: hhmm(&rq.now, site)}
	for _, v := range s.cfg.Store.OnSite() {
		d.Visits = append(d.Visits, s.row(rq, site, v))
	}
	s.render(w, r, rq, http.StatusOK, "evacuation", &page{Reception: true, Data: d})
}

type evacuation struct {
	Visits []row
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
	if _, err := s.cfg.Store.Take(r.Context(), v.ID, r.PostFormValue("person_id"), rq.desk()); err != nil {
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
	if _, err := s.cfg.Store.HandOver(r.Context(), v.ID, to, rq.desk()); err != nil {
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
	if _, err := s.cfg.Store.CheckOut(r.Context(), v.ID, rq.desk()); err != nil {
		var st *StateError
		if errors.As(err, &st) {
			site := s.cfg.Store.Site()
			var d receptionData
			for _, v := range s.cfg.Store.OnSite() {
				d.OnSite = append(d.OnSite, s.row(rq, site, v))
			}
			s.render(w, r, rq, http.StatusConflict, "reception", &page{Reception: true, Data: d, Problem: rq.cat.T("state."+stateKey(st), st.Status)})
			return
		}
		s.actionFailed(w, r, rq, err, "reception", receptionData{})
		return
	}
	http.Redirect(w, r, "/reception", http.StatusSeeOther)
}

// badgePNG renders the visit's badge for the kiosk's label.
func (s *Server) renderBadge(rq *request, v Visit) ([]byte, error) {
	site := s.cfg.Store.Site()
	at := rq.now
	if v.CheckedInAt != nil {
		at = *v.CheckedInAt
	}
	vt, _ := s.cfg.Store.VisitType(v.Type)
	name := vt.Name
	if name == "" {
		name = v.Type
	}
	caption := ""
	if receiverName(v) != "" {
		caption = rq.cat.T("badge.visiting")
	}
	return badge.RenderPNG(badge.Badge{VisitorName: v.Visitor.Name, Company: v.Visitor.Company, Host: receiverName(v),
		HostCaption: caption, VisitType: name, At: at, Location: site.Location, Token: v.Pass, SiteName: site.Name,
		Logo: site.Logo, Label: s.label()})
}

func (s *Server) badgePNG(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	if v.Pass == "" {
		s.notFound(w, r, rq)
		return
	}
	png, err := s.renderBadge(rq, v)
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
// one badge, not two; a reprint from reception is a job of its own.
func (s *Server) printBadge(w http.ResponseWriter, r *http.Request, rq *request) {
	v, ok := s.visitFor(w, r, rq)
	if !ok {
		return
	}
	d := doneData{Visit: v, Receiver: receiverName(v), Printer: s.printerOf(rq.dev) != "" && s.cfg.Printer != nil}
	if !d.Printer || v.Pass == "" {
		http.Redirect(w, r, "/visits/"+v.ID+"/badge", http.StatusSeeOther)
		return
	}
	png, err := s.renderBadge(rq, v)
	if err != nil {
		s.fail(w, r, rq, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	jobID := badgeJob(v.ID)
	if r.PostFormValue("reprint") != "" && rq.reception {
		jobID += "-" + rq.now.UTC().Format("20060102T150405")
	}
	// A job that failed is sent again by the same tap: the person at the
	// desk loaded labels or closed the cover and asks again. A printed one
	// is never sent twice (Submit and Retry both keep to that).
	var job printer.Job
	if prev, ok := s.cfg.Printer.Get(jobID); ok && prev.State == printer.JobFailed {
		job, err = s.cfg.Printer.Retry(r.Context(), jobID)
	} else {
		job, err = s.cfg.Printer.Submit(r.Context(), jobID, s.printerOf(rq.dev), s.label(), png)
	}
	if err != nil {
		s.fail(w, r, rq, err)
		return
	}
	d.Jobs = []printJob{s.printJob(rq, job)}
	d.Reprint = rq.reception && job.State == printer.JobPrinted
	p := &page{Idle: !rq.reception, Reception: rq.reception, Data: d}
	status := http.StatusOK
	if job.State == printer.JobFailed {
		status, p.Problem = http.StatusBadGateway, rq.cat.T("print.failed", d.Jobs[0].Why)
	}
	s.render(w, r, rq, status, "done", p)
}

// badgeJob is the print job of a visit's first badge: a second tap sends
// the same job, which prints once.
func badgeJob(visitID string) string { return "badge-" + visitID }

// printed reports whether the visit's first badge was printed.
func (s *Server) printed(visitID string) bool {
	j, ok := s.cfg.Printer.Get(badgeJob(visitID))
	return ok && j.State == printer.JobPrinted
}

// printJob is a print job as the desk sees it: its state and, for a
// failed one, why in plain words.
type printJob struct {
	ID    string
	State string
	Why   string
}

func (s *Server) printJob(rq *request, j printer.Job) printJob {
	out := printJob{ID: j.ID, State: string(j.State)}
	if j.State == printer.JobFailed {
		out.Why = rq.cat.T("printer." + string(j.Reason))
	}
	return out
}

// pendingJobs are the jobs the printers have not taken.
func (s *Server) pendingJobs(rq *request) []printJob {
	if s.cfg.Printer == nil {
		return nil
	}
	var out []printJob
	for _, j := range s.cfg.Printer.List() {
		if j.State != printer.JobPrinted {
			out = append(out, s.printJob(rq, j))
		}
	}
	return out
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
