package kiosk

import (
	"encoding/json"
	"html/template"
	"net/url"
	"sync"

	"github.com/svc-vms/svc/kiosk/formview"
	"github.com/svc-vms/svc/shared/form"
)

// forms parses each visit type's schema once per schema text: the cache
// hands the same bytes until the cloud changes the form.
type forms struct {
	mu sync.Mutex
	m  map[string]*form.Form // schema text → parsed
}

func (f *forms) get(schema []byte) (*form.Form, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.m[string(schema)]; ok {
		return p, nil
	}
	p, err := form.Parse(schema)
	if err != nil {
		return nil, err
	}
	if f.m == nil || len(f.m) > 256 {
		f.m = map[string]*form.Form{}
	}
	f.m[string(schema)] = p
	return p, nil
}

func (s *Server) formOptions(rq *request) formview.Options {
	site := s.cfg.Store.Site()
	return formview.Options{
		SiteID: site.ID,
		T:      func(k string) string { return rq.cat.T(k) },
		People: func(id string) (string, bool) {
			p, ok := s.cfg.Store.Person(id)
			return p.Name, ok
		},
		SearchURL: "/people",
		SearchPeople: func(q string) []formview.Person {
			var out []formview.Person
			for _, p := range s.people(q) {
				out = append(out, formview.Person{ID: p.ID, Name: p.Name, JobTitle: p.JobTitle})
			}
			return out
		},
		Location: site.Location,
	}
}

// renderForm is the visit type's questions as HTML, with the answers so
// far and their errors. A type whose form does not parse shows none: the
// cloud checked it when it was saved, so this is a cache from a newer
// cloud, and the walk-in goes on without its questions.
func (s *Server) renderForm(rq *request, vt VisitType, values url.Values, errs []form.FieldError) template.HTML {
	f, err := s.forms.get(vt.Schema)
	if err != nil {
		s.log.Error("kiosk: visit type form", "type", vt.Key, "error", err.Error())
		return ""
	}
	h, err := formview.Render(f, values, errs, s.formOptions(rq))
	if err != nil {
		s.log.Error("kiosk: render form", "type", vt.Key, "error", err.Error())
		return ""
	}
	return h
}

// parseForm reads the visit type's answers from a submitted sign-in,
// enforcing required questions (the API asks them at check-in: here).
// ok is false when there are errors or the answers revealed questions the
// visitor has not seen yet.
func (s *Server) parseForm(rq *request, vt VisitType, values url.Values) (answers map[string]json.RawMessage, errs []form.FieldError, ok bool) {
	f, err := s.forms.get(vt.Schema)
	if err != nil {
		return nil, nil, true
	}
	res := formview.Parse(f, values, s.formOptions(rq))
	return res.Answers, res.Errors, res.OK()
}

// formAsksCompany reports whether the type's form has a company question,
// a text one: the visitor's company is then its answer.
func (s *Server) formAsksCompany(vt VisitType) bool {
	f, err := s.forms.get(vt.Schema)
	if err != nil {
		return false
	}
	q, ok := f.Question("company")
	return ok && q.Type == "string"
}
