package kiosk

import (
	"html/template"
	"net/url"
)

// renderForm is the visit type's questions as HTML, with the answers so
// far and their errors.
func (s *Server) renderForm(rq *request, vt VisitType, values url.Values, errs map[string]string) template.HTML {
	return ""
}

// parseForm reads the visit type's answers from a submitted sign-in,
// enforcing required questions (the API asks them at check-in: here).
func (s *Server) parseForm(rq *request, vt VisitType, values url.Values) (map[string][]byte, map[string]string) {
	return nil, nil
}
