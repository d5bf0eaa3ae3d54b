package formview

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/svc-vms/svc/shared/form"
)

//go:embed form.html
var pageText string

// page is parsed once: the template is part of the program, so a mistake
// in it fails every test, not a visitor's request.
var page = template.Must(template.New("").Parse(pageText)).Lookup("form")

// view is what the template renders.
type view struct {
	Words     *words
	Shown     string
	Questions []qview
}

// words are the kiosk's words, translated once per render.
type words struct {
	Yes, No, Required, Choose, Error, Agree, PersonHint, PersonNone string
}

// qview is one question, ready to render.
type qview struct {
	W                       *words
	Key, ID, Name, Type     string
	Kind                    string // input, textarea, select, radios, consent or person
	InputType, InputMode    string
	Title, Description      string
	Unit, ConsentText       string
	Value, PersonQuery      string
	SearchURL               string
	MaxLength               int
	Hidden, Required, YesNo bool
	AlwaysRequired          bool
	ShowIf, RequiredWhen    string // JSON for the script
	Error, DescribedBy      string
	Choices, Matches        []cview
}

// cview is one radio button or list entry.
type cview struct {
	ID, Value, Label string
	Checked          bool
}

// condJSON is a form.Condition as the script reads it.
type condJSON struct {
	Key   string          `json:"k"`
	Value json.RawMessage `json:"v"`
}

func buildView(f *form.Form, values url.Values, errs []form.FieldError, opts Options) view {
	w := &words{
		Yes: opts.t(KeyYes), No: opts.t(KeyNo), Required: opts.t(KeyRequired), Choose: opts.t(KeyChoose),
		Error: opts.t(KeyError), Agree: opts.t(KeyAgree), PersonHint: opts.t(KeyPersonHint), PersonNone: opts.t(KeyPersonNone),
	}
	qs := askedQuestions(f, opts.SiteID)
	answers, persons := readAnswers(qs, values, opts)
	visible := f.Visible(answers, opts.SiteID)
	required := f.Required(answers, opts.SiteID)
	problems := map[string]string{}
	for _, e := range errs {
		if _, dup := problems[e.Field]; !dup {
			problems[e.Field] = e.Message
		}
	}

	d := view{Words: w, Questions: make([]qview, 0, len(qs))}
	var shown []string
	for _, q := range qs {
		v := qview{
			W: w, Key: q.Key, ID: "cf-" + q.Key, Name: FieldPrefix + q.Key, Type: q.Type,
			Title: q.Title, Description: q.Description, Unit: q.Unit, ConsentText: q.ConsentText,
			Hidden:         !slices.Contains(visible, q.Key),
			Required:       slices.Contains(required, q.Key),
			AlwaysRequired: q.Required,
			ShowIf:         showIfJSON(q.ShowIf),
			RequiredWhen:   requiredWhenJSON(q.RequiredWhen),
		}
		if v.Title == "" {
			v.Title = q.Key // a label must say something; the key is the schema's own word
		}
		if !v.Hidden {
			shown = append(shown, q.Key)
			v.Error = problems[q.Key]
		}
		v.Value = strings.TrimSpace(firstValue(values[v.Name]))
		setKind(&v, q, persons[q.Key], opts)
		v.DescribedBy = describedBy(v)
		d.Questions = append(d.Questions, v)
	}
	d.Shown = strings.Join(shown, ",")
	return d
}

// setKind chooses the control for q and fills what that control shows.
func setKind(v *qview, q form.Question, p personInput, opts Options) {
	switch {
	case q.XType == "person":
		v.Kind, v.SearchURL = "person", opts.SearchURL
		v.Value, v.PersonQuery = p.id, p.query
		if p.id != "" && p.query == "" && opts.People != nil {
			if n, ok := opts.People(p.id); ok {
				v.PersonQuery = n
			}
		}
		if p.typed && opts.SearchPeople != nil && !v.Hidden {
			for i, m := range opts.SearchPeople(p.query) {
				label := m.Name
				if m.JobTitle != "" {
					label += ", " + m.JobTitle
				}
				v.Matches = append(v.Matches, cview{ID: v.ID + "-m" + strconv.Itoa(i), Value: m.ID, Label: label})
			}
		}
	case q.XType == "consent":
		v.Kind = "consent"
	case q.Choices != nil:
		v.Kind = "select"
		if len(q.Choices) <= maxRadios {
			v.Kind = "radios"
		}
		v.YesNo = q.Type == "boolean"
		for i, c := range q.Choices {
			label := c.Label
			if label == "" {
				switch {
				case v.YesNo && c.Text == "true":
					label = v.W.Yes
				case v.YesNo:
					label = v.W.No
				default:
					label = c.Text
				}
			}
			v.Choices = append(v.Choices, cview{ID: v.ID + "-" + strconv.Itoa(i), Value: c.Text, Label: label, Checked: c.Text == v.Value})
		}
	case q.XType == "long_text":
		v.Kind, v.MaxLength = "textarea", q.MaxLength
	default:
		v.Kind, v.InputType, v.MaxLength = "input", "text", q.MaxLength
		switch {
		case q.Type == "integer":
			v.InputMode = "numeric"
		case q.Type == "number":
			v.InputMode = "decimal"
		case q.XType == "phone":
			v.InputType = "tel"
		case q.Format == "email":
			v.InputType = "email"
		case q.Format == "uri":
			v.InputType = "url"
		case q.Format == "date":
			v.InputType = "date"
		case q.Format == "date-time":
			v.InputType = "datetime-local" // values hold local time (Values, fromLocal)
		}
	}
}

// describedBy lists the IDs of what describes a question's control.
func describedBy(v qview) string {
	var refs []string
	switch {
	case v.Kind == "consent":
		refs = append(refs, v.ID+"-text")
	case v.Kind == "person":
		refs = append(refs, v.ID+"-hint")
	case v.Unit != "":
		refs = append(refs, v.ID+"-unit")
	}
	if v.Description != "" {
		refs = append(refs, v.ID+"-help")
	}
	if v.Error != "" {
		refs = append(refs, v.ID+"-error")
	}
	return strings.Join(refs, " ")
}

func showIfJSON(c *form.Condition) string {
	if c == nil {
		return ""
	}
	b, _ := json.Marshal(condJSON{Key: c.Key, Value: c.Value}) // valid JSON from shared/form
	return string(b)
}

func requiredWhenJSON(items [][]form.Condition) string {
	if items == nil {
		return ""
	}
	out := make([][]condJSON, len(items))
	for i, item := range items {
		for _, c := range item {
			out[i] = append(out[i], condJSON{Key: c.Key, Value: c.Value})
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
