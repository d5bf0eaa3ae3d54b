package formview

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

// FieldPrefix begins the name of every control Render emits: question k is
// FieldPrefix+k, a person question's search text FieldPrefix+k+".q".
const FieldPrefix = "cf."

// shownField lists, comma-separated, the questions the form showed when it
// was submitted. Keys start with a letter, so it names no question.
const shownField = FieldPrefix + "_shown"

// Assets holds ScriptFile and StylesheetFile for the kiosk to serve.
//
//go:embed formview.js formview.css
var Assets embed.FS

// Files of Assets.
const (
	// ScriptFile shows and hides questions as answers change and searches
	// people; the form works without it.
	ScriptFile = "formview.js"
	// StylesheetFile gives controls large touch targets.
	StylesheetFile = "formview.css"
)

// Keys of the kiosk's own words, looked up through Options.T.
const (
	KeyYes          = "form.yes"           // a yes/no question's yes
	KeyNo           = "form.no"            // a yes/no question's no
	KeyRequired     = "form.required"      // the visible mark of a required question
	KeyChoose       = "form.choose"        // a list's empty first choice ("Choose…")
	KeyError        = "form.error"         // before each problem ("Error:")
	KeyAgree        = "form.agree"         // a consent question's checkbox ("I agree")
	KeyPersonHint   = "form.person_hint"   // under a person search ("Type at least 2 letters of a name")
	KeyPersonNone   = "form.person_none"   // the script's "no one found"
	KeyPersonChoose = "form.person_choose" // the problem of a typed name not chosen from the list
)

// MessageKeys returns every key this package passes to Options.T, so the
// kiosk's catalogue test can check each language has them.
func MessageKeys() []string {
	return []string{KeyYes, KeyNo, KeyRequired, KeyChoose, KeyError, KeyAgree, KeyPersonHint, KeyPersonNone, KeyPersonChoose}
}

// maxRadios is the most choices shown as radio buttons; more are a list,
// which stays usable on a tablet however long the enum is.
const maxRadios = 6

// Person is one person a search found.
type Person struct {
	ID, Name, JobTitle string
}

// Options say where a form is asked and how the kiosk words it.
type Options struct {
	// SiteID is the kiosk's site: x-svc-sites questions of other sites are
	// neither shown nor kept.
	SiteID string
	// T translates the kiosk's own words (MessageKeys). Nil shows the keys.
	T func(key string) string
	// People names the person an answer holds, to show who was chosen;
	// ok is false for no such person, which Parse refuses. Nil shows IDs
	// and checks their form only.
	People func(id string) (name string, ok bool)
	// SearchURL is the kiosk's GET endpoint the script asks for people:
	// SearchURL?q=TEXT answering a JSON array of {"id", "name",
	// "job_title"}. It is put in the page as data-search-url.
	SearchURL string
	// SearchPeople, when set, lets a browser without the script choose a
	// person: a name typed and submitted is rendered back as a list of
	// matches to pick from.
	SearchPeople func(q string) []Person
	// Location is the site's time zone, for date-time questions (the
	// browser's datetime-local has no zone); nil is UTC.
	Location *time.Location
}

func (o Options) t(key string) string {
	if o.T == nil {
		return key
	}
	return o.T(key)
}

func (o Options) loc() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

// asked reports whether the kiosk asks q at all. A photo question is not
// asked: the desk has no way yet to take one and store it (its answer is
// a string the console fills in), and form.Missing never lists it.
func asked(q form.Question) bool { return q.XType != "photo" }

// Result is a submitted form, read.
type Result struct {
	// Answers are the answers to store (compact, normalised by
	// shared/form), only those of questions shown; nil unless OK.
	Answers map[string]json.RawMessage
	// Errors are the problems, sorted by key, at most one per key: the
	// API's messages, "is required" for a required question left
	// unanswered, and KeyPersonChoose for a name typed but not chosen.
	Errors []form.FieldError
	// Unseen are questions shown now that the form did not show when it
	// was submitted (the answers revealed them, and the browser ran no
	// script): render the form again to ask them.
	Unseen []string
}

// OK reports whether the answers can be stored.
func (r Result) OK() bool { return len(r.Errors) == 0 && len(r.Unseen) == 0 }

// Parse reads a submitted form: values are the request's form values (the
// page's own fields are ignored). Answers are typed per question (numbers
// as JSON numbers, booleans as booleans, person IDs as strings), answers of
// questions not shown are dropped, and everything is checked as
// form.ValidateAtDesk does, with the API's messages. Input that is not a
// number where one is asked is kept as text, so Validate refuses it with
// the API's words ("must be an integer"). It never panics.
func Parse(f *form.Form, values url.Values, opts Options) Result {
	qs := askedQuestions(f, opts.SiteID)
	answers, persons := readAnswers(qs, values, opts)
	out, errs := f.ValidateAtDesk(answers, opts.SiteID)

	visible := f.Visible(answers, opts.SiteID)
	byKey := map[string]form.Question{}
	for _, q := range qs {
		byKey[q.Key] = q
	}
	var extra []form.FieldError
	for _, k := range visible {
		p, ok := persons[k]
		if !ok {
			continue
		}
		switch {
		case p.typed:
			extra = append(extra, form.FieldError{Field: k, Message: opts.t(KeyPersonChoose)})
		case opts.People != nil && ids.Valid(ids.Person, p.id):
			if _, ok := opts.People(p.id); !ok {
				// The API's words for a person ID that names no one
				// (cloud's checkPeople; this package may not import it).
				extra = append(extra, form.FieldError{Field: k, Message: "no person with this ID"})
			}
		}
	}

	seen := map[string]bool{}
	for _, k := range strings.Split(values.Get(shownField), ",") {
		seen[k] = true
	}
	var res Result
	for _, k := range visible {
		if _, ok := byKey[k]; ok && !seen[k] {
			res.Unseen = append(res.Unseen, k)
		}
	}
	for _, e := range slices.Concat(errs, extra) {
		if slices.Contains(res.Unseen, e.Field) || slices.ContainsFunc(res.Errors, func(o form.FieldError) bool { return o.Field == e.Field }) {
			continue // not shown yet, or one problem per question
		}
		res.Errors = append(res.Errors, e)
	}
	slices.SortStableFunc(res.Errors, func(a, b form.FieldError) int { return cmp.Compare(a.Field, b.Field) })
	if res.OK() {
		res.Answers = out
	}
	return res
}

// askedQuestions returns the questions the kiosk asks at the site.
func askedQuestions(f *form.Form, siteID string) []form.Question {
	var qs []form.Question
	for _, q := range f.Questions() {
		if asked(q) && (q.Sites == nil || slices.Contains(q.Sites, siteID)) {
			qs = append(qs, q)
		}
	}
	return qs
}

// personInput is what a person question's controls held.
type personInput struct {
	id    string
	query string
	// typed is true when a name was typed but no person chosen for it.
	typed bool
}

// readAnswers turns form values into answers, one per question asked.
func readAnswers(qs []form.Question, values url.Values, opts Options) (map[string]json.RawMessage, map[string]personInput) {
	answers := map[string]json.RawMessage{}
	persons := map[string]personInput{}
	for _, q := range qs {
		name := FieldPrefix + q.Key
		if q.XType == "person" {
			p := readPerson(values, name, opts)
			persons[q.Key] = p
			if p.id != "" {
				answers[q.Key] = jsonString(p.id)
			}
			continue
		}
		v := firstValue(values[name])
		if q.Type == "string" && q.XType == "long_text" {
			v = strings.ReplaceAll(v, "\r\n", "\n")
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue // no answer
		}
		answers[q.Key] = typed(q, v, opts)
	}
	return answers, persons
}

// readPerson reads a person question: the chosen ID (the hidden input, or
// a match picked without the script) and the search text. A chosen person
// whose name was then typed over is a new search; a match picked from the
// list rendered for a search (name+".searched") is the answer.
func readPerson(values url.Values, name string, opts Options) personInput {
	p := personInput{query: strings.TrimSpace(values.Get(name + ".q"))}
	for _, v := range values[name] {
		if v = strings.TrimSpace(v); v != "" {
			p.id = v
			break
		}
	}
	picked := p.query == strings.TrimSpace(values.Get(name+".searched"))
	if p.id != "" && p.query != "" && !picked && opts.People != nil {
		if n, ok := opts.People(p.id); ok && n != p.query {
			p.id = ""
		}
	}
	p.typed = p.id == "" && p.query != ""
	return p
}

func firstValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// typed returns v as the JSON answer to q: a number or boolean where q asks
// one and v is one, else a string (which Validate refuses with the API's
// words when q wants another type).
func typed(q form.Question, v string, opts Options) json.RawMessage {
	switch q.Type {
	case "integer", "number":
		if jsonNumber.MatchString(v) {
			return json.RawMessage(v)
		}
	case "boolean":
		if v == "true" || v == "false" {
			return json.RawMessage(v)
		}
	case "string":
		if q.Format == "date-time" {
			v = fromLocal(v, opts.loc())
		}
	}
	return jsonString(v)
}

// Layouts of a datetime-local control's value.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

// fromLocal turns a datetime-local value, in the site's zone, into RFC 3339;
// anything else is left for Validate to judge.
func fromLocal(v string, loc *time.Location) string {
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, v, loc); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return v
}

// toLocal is fromLocal's inverse, for rendering a stored answer.
func toLocal(v string, loc *time.Location) string {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.In(loc).Format(localLayouts[0])
	}
	return v
}

func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Values turns stored answers into form values, to render a form filled in
// (a returning visitor, a visit being completed at the desk).
func Values(f *form.Form, answers map[string]json.RawMessage, opts Options) url.Values {
	values := url.Values{}
	for _, q := range f.Questions() {
		raw, ok := answers[q.Key]
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil || v == nil {
			continue
		}
		name := FieldPrefix + q.Key
		switch x := v.(type) {
		case string:
			if q.Format == "date-time" {
				x = toLocal(x, opts.loc())
			}
			values.Set(name, x)
			if q.XType == "person" && opts.People != nil {
				if n, ok := opts.People(x); ok {
					values.Set(name+".q", n)
				}
			}
		default:
			values.Set(name, string(bytes.TrimSpace(raw)))
		}
	}
	return values
}

// Render returns the form's HTML for the page to embed, filled in from
// values (nil for an empty form; a submitted form's values to show it
// again) with errs shown beside their questions (Result.Errors). Every
// question asked at the site is in the HTML, in x-svc-order; those not
// shown now are hidden with their controls disabled, for the script to
// show. The schema's texts are escaped like any other data.
func Render(f *form.Form, values url.Values, errs []form.FieldError, opts Options) (template.HTML, error) {
	d := buildView(f, values, errs, opts)
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		return "", fmt.Errorf("render form: %w", err)
	}
	return template.HTML(b.String()), nil // html/template escaped it
}
