package form

import (
	"cmp"
	"encoding/json"
	"slices"
)

// Question is one question of a form as a screen asks it: everything the
// schema says about it, read once by Parse. Slices are the caller's.
type Question struct {
	Key string
	// Type is the answer's JSON type: string, boolean, integer or number.
	Type string
	// XType is x-svc-type, or when the schema gives none what it stands
	// for: choice for a question with an enum, yes_no for a boolean, text
	// for a string, and "" for an integer or number.
	XType string
	// Title and Description are the schema's texts, "" when absent.
	Title, Description string
	// Unit is x-svc-unit ("parcels"), for integers and numbers.
	Unit string
	// ConsentText is x-svc-consent-text, for consent questions.
	ConsentText string
	// Format is the string format: email, date, date-time, uri or "".
	Format string
	// MinLength and MaxLength bound a string answer, in characters;
	// MaxLength is DefaultMaxLength when the schema sets none.
	MinLength, MaxLength int
	// Pattern is the regular expression a string answer must match, or "".
	Pattern string
	// Minimum and Maximum are the bounds as written ("" when absent).
	Minimum, Maximum string
	// Choices are the enum's values in schema order with their labels;
	// for a boolean without an enum, true then false.
	Choices []Choice
	// ShowIf is x-svc-show-if: the question is shown only when it holds.
	ShowIf *Condition
	// Sites is x-svc-sites: the question is asked only at these sites
	// (nil: at every site).
	Sites []string
	// Required is true when the top-level required lists the question.
	Required bool
	// RequiredWhen lists the allOf items that require the question: it is
	// required when every condition of any one item holds.
	RequiredWhen [][]Condition
	// Visitor, Sensitive and Masked are x-svc-visitor, x-svc-sensitive and
	// x-svc-masked.
	Visitor, Sensitive, Masked bool
}

// Choice is one value a question offers.
type Choice struct {
	// Value is the value as normalised JSON ("car", 3, true).
	Value json.RawMessage
	// Text is the value as a form control holds it: a string as is, a
	// number or boolean as its JSON text.
	Text string
	// Label is the value's x-svc-labels label, or "" when it has none.
	Label string
}

// Condition holds when the question Key is answered Value.
type Condition struct {
	Key string
	// Value is normalised JSON, as in Choice.
	Value json.RawMessage
}

// Questions returns every question in screen order (x-svc-order).
func (f *Form) Questions() []Question {
	out := make([]Question, len(f.order))
	for i, k := range f.order {
		out[i] = f.export(f.questions[k])
	}
	return out
}

// Question returns the question k.
func (f *Form) Question(k string) (Question, bool) {
	q := f.questions[k]
	if q == nil {
		return Question{}, false
	}
	return f.export(q), true
}

func (f *Form) export(q *question) Question {
	out := Question{
		Key: q.key, Type: q.typ, XType: q.xtype,
		Title: q.title, Description: q.description, Unit: q.unit, ConsentText: q.consentText,
		Format: q.format, Minimum: q.minText, Maximum: q.maxText,
		Sites:    slices.Clone(q.sites),
		Required: slices.Contains(f.required, q.key),
		Visitor:  q.visitor, Sensitive: q.sensitive, Masked: q.masked,
	}
	if q.typ == typeString {
		out.MinLength, out.MaxLength = q.minLen, q.maxLen
		if q.pattern != nil {
			out.Pattern = q.pattern.String()
		}
	}
	if out.XType == "" {
		switch {
		case q.enum != nil:
			out.XType = xChoice
		case q.typ == typeBoolean:
			out.XType = xYesNo
		case q.typ == typeString:
			out.XType = xText
		}
	}
	values := q.enum
	if values == nil && q.typ == typeBoolean {
		t, _ := q.check(true)
		f, _ := q.check(false)
		values = []scalar{t, f}
	}
	for _, v := range values {
		out.Choices = append(out.Choices, Choice{Value: v.text, Text: v.display, Label: q.labels[v.key]})
	}
	if q.showField != "" {
		out.ShowIf = &Condition{Key: q.showField, Value: q.showValue.text}
	}
	for _, r := range f.rules {
		if !slices.Contains(r.then, q.key) {
			continue
		}
		conds := make([]Condition, len(r.conds))
		for i, c := range r.conds {
			conds[i] = Condition{Key: c.key, Value: c.val.text}
		}
		out.RequiredWhen = append(out.RequiredWhen, conds)
	}
	return out
}

// Visible returns the keys of the questions a screen shows now at the site
// siteID, given the answers so far, in screen order. A question limited by
// x-svc-sites to other sites is never shown; a question with x-svc-show-if
// is shown while the question it names is shown and answered the value it
// names. Show-if names only earlier questions, so one pass settles it, and
// hiding a question hides those that hang on it. An answer that is not a
// valid answer to its question equals nothing.
func (f *Form) Visible(answers map[string]json.RawMessage, siteID string) []string {
	shown := make(map[string]bool, len(f.order))
	var keys []string
	for _, k := range f.order {
		q := f.questions[k]
		if q.sites != nil && !slices.Contains(q.sites, siteID) {
			continue
		}
		if q.showField != "" && (!shown[q.showField] || !f.answered(q.showField, answers[q.showField], q.showValue)) {
			continue
		}
		shown[k] = true
		keys = append(keys, k)
	}
	return keys
}

// answered reports whether raw is a valid answer to question k equal to v.
func (f *Form) answered(k string, raw json.RawMessage, v scalar) bool {
	a, ok := decodeAnswer(raw)
	if !ok || a == nil {
		return false
	}
	s, msg := f.questions[k].check(a)
	return msg == "" && s.key == v.key
}

// Messages of Missing, in the words of the API's other required fields.
const (
	// MessageRequired is Missing's message for a required question with no
	// answer.
	MessageRequired = "is required"
	// MessageNotAccepted is Missing's message for a required consent
	// question that is not answered true.
	MessageNotAccepted = "must be accepted"
)

// Required returns the keys of the questions shown now (Visible) that are
// required now, in screen order. A question is required when the top-level
// required lists it, or when every condition of an allOf item that lists
// it holds; conditions read only the answers of questions shown, so an
// answer left behind by a hidden question requires nothing.
//
// The API does not enforce required questions (the spec asks them at
// check-in); the desk does, with this and Missing.
func (f *Form) Required(answers map[string]json.RawMessage, siteID string) []string {
	visible := f.Visible(answers, siteID)
	shown := make(map[string]bool, len(visible))
	for _, k := range visible {
		shown[k] = true
	}
	required := map[string]bool{}
	for _, k := range f.required {
		required[k] = true
	}
	for _, r := range f.rules {
		holds := true
		for _, c := range r.conds {
			if !shown[c.key] || !f.answered(c.key, answers[c.key], c.val) {
				holds = false
				break
			}
		}
		if holds {
			for _, k := range r.then {
				required[k] = true
			}
		}
	}
	var keys []string
	for _, k := range visible {
		if required[k] {
			keys = append(keys, k)
		}
	}
	return keys
}

// Missing returns the questions Required now that have no answer, sorted
// by key like Validate's problems. Null is no answer, and a required
// consent question must be answered true: agreeing is what it asks. An
// answer that is not valid is not missing: Validate says what is wrong.
// A photo question is never missing: the desk has no camera to take one
// with, so it is completed in the console.
func (f *Form) Missing(answers map[string]json.RawMessage, siteID string) []FieldError {
	var errs []FieldError
	for _, k := range slices.Sorted(slices.Values(f.Required(answers, siteID))) {
		v, ok := decodeAnswer(answers[k])
		switch {
		case f.questions[k].xtype == xPhoto:
		case f.questions[k].xtype == xConsent:
			if ok && v == nil || v == false {
				errs = append(errs, FieldError{Field: k, Message: MessageNotAccepted})
			}
		case ok && v == nil:
			errs = append(errs, FieldError{Field: k, Message: MessageRequired})
		}
	}
	return errs
}

// ValidateAtDesk checks the answers given at a site's desk, where required
// questions are asked: answers to questions not shown now (Visible) are
// dropped, since the screen no longer asks them; the rest go through
// Validate as the API's staff would send them (Options{SiteID: siteID}),
// and Missing adds the required questions left unanswered. It returns the
// answers to store, nil while there is a problem, and every problem sorted
// by key, at most one per key. Keys the form does not have are kept, so
// Validate refuses them as the API does.
func (f *Form) ValidateAtDesk(answers map[string]json.RawMessage, siteID string) (map[string]json.RawMessage, []FieldError) {
	kept := f.shownAnswers(answers, siteID)
	out, errs := f.Validate(kept, Options{SiteID: siteID})
	if missing := f.Missing(kept, siteID); missing != nil {
		errs = append(errs, missing...)
		slices.SortStableFunc(errs, func(a, b FieldError) int { return cmp.Compare(a.Field, b.Field) })
		out = nil
	}
	return out, errs
}

// shownAnswers returns answers without those to questions not shown now.
func (f *Form) shownAnswers(answers map[string]json.RawMessage, siteID string) map[string]json.RawMessage {
	visible := f.Visible(answers, siteID)
	kept := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		if f.questions[k] == nil || slices.Contains(visible, k) {
			kept[k] = v
		}
	}
	return kept
}
