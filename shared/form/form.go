package form

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svc-vms/svc/shared/ids"
)

// Form is a parsed, checked form schema. It is immutable: one Form may be
// shared by every request that reads it.
type Form struct {
	questions map[string]*question
	order     []string
	required  []string
	rules     []rule
	schema    json.RawMessage
	public    json.RawMessage
}

// Schema returns the schema in canonical form: compact, object keys sorted,
// numbers and strings as given. Parsing it again gives the same bytes.
func (f *Form) Schema() json.RawMessage { return bytes.Clone(f.schema) }

// Keys returns the question keys in screen order (x-svc-order).
func (f *Form) Keys() []string { return slices.Clone(f.order) }

// HasPublic reports whether any question is asked of the visitor
// (x-svc-visitor).
func (f *Form) HasPublic() bool {
	for _, q := range f.questions {
		if q.visitor {
			return true
		}
	}
	return false
}

// Public returns the visitor-facing form, in the canonical form Schema
// uses: only the x-svc-visitor questions, in x-svc-order, with required
// filtered to them and the allOf items whose if names only visitor
// questions (their then filtered to visitor questions; an item left with
// nothing required is dropped). It always states $schema and
// "additionalProperties": false, and Parse accepts it.
func (f *Form) Public() json.RawMessage { return bytes.Clone(f.public) }

// PublicVersion identifies the content of Public: the first 16 hex digits
// of its SHA-256. It changes exactly when what the visitor is asked changes
// (an edit to a staff-only question leaves it alone), and needs no counter
// kept in step across processes, modes or databases.
func (f *Form) PublicVersion() string {
	sum := sha256.Sum256(f.public)
	return hex.EncodeToString(sum[:8])
}

func (f *Form) publicTree(root map[string]any) map[string]any {
	isPublic := func(k string) bool { return f.questions[k].visitor }
	props := map[string]any{}
	for k, q := range f.questions {
		if q.visitor {
			props[k] = q.raw
		}
	}
	pub := map[string]any{
		"$schema":              SchemaURI,
		"type":                 "object",
		"additionalProperties": false,
		"properties":           props,
		"x-svc-order":          filter(f.order, isPublic),
	}
	for _, k := range []string{"title", "description"} {
		if v, ok := root[k]; ok {
			pub[k] = v
		}
	}
	if req := filter(f.required, isPublic); len(req) > 0 {
		pub["required"] = req
	}
	var rules []any
	for _, r := range f.rules {
		then := filter(r.then, isPublic)
		if len(then) == 0 || !allOf(r.ifKeys, isPublic) {
			continue
		}
		rules = append(rules, map[string]any{"if": r.raw, "then": map[string]any{"required": then}})
	}
	if len(rules) > 0 {
		pub["allOf"] = rules
	}
	return pub
}

func filter(keys []string, keep func(string) bool) []string {
	out := []string{}
	for _, k := range keys {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

func allOf(keys []string, ok func(string) bool) bool {
	for _, k := range keys {
		if !ok(k) {
			return false
		}
	}
	return true
}

// Options says who is answering, and where.
type Options struct {
	// Public limits answers to the public form: set for publishable keys.
	Public bool
	// SiteID is the visit's site. Questions limited by x-svc-sites to
	// other sites, or asked at some sites while SiteID is "", are refused.
	SiteID string
}

// Validate checks answers, the custom_fields object of a request decoded
// as map[string]json.RawMessage (so number text is kept), and returns the
// answers to store and every problem found, sorted by key, at most one per
// key.
//
// Null is no answer: it is accepted for any question of the form and left
// out of the result. Required questions (required, allOf) and x-svc-show-if
// are not enforced: required questions are asked at check-in or when the
// visitor completes pre-registration. A person question's ID is checked
// for form only; the caller checks it exists (PersonRefs).
//
// The answers to store are compact JSON, strings without HTML escaping and
// integers in plain decimal (1.0 and 1e2 become 1 and 100); number text is
// kept as sent. They are nil when there is a problem, and an empty map for
// no answers.
func (f *Form) Validate(answers map[string]json.RawMessage, opts Options) (map[string]json.RawMessage, []FieldError) {
	out := make(map[string]json.RawMessage, len(answers))
	var errs []FieldError
	for _, k := range sortedKeys(answers) {
		msg, norm := f.validateOne(k, answers[k], opts)
		if msg != "" {
			errs = append(errs, FieldError{Field: k, Message: msg})
		} else if norm != nil {
			out[k] = norm
		}
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// validateOne checks the answer raw to question k. It returns a problem,
// or the normalised answer (nil for null).
func (f *Form) validateOne(k string, raw json.RawMessage, opts Options) (string, json.RawMessage) {
	q := f.questions[k]
	if opts.Public && (q == nil || !q.visitor) {
		// The same words for a staff-only question as for no question, so
		// that a visitor cannot learn what else the form asks.
		return "is not in this visit type's public form", nil
	}
	if q == nil {
		return "is not a question of this form", nil
	}
	v, ok := decodeAnswer(raw)
	if !ok {
		return "must be a single JSON value", nil
	}
	if v == nil {
		return "", nil
	}
	if q.sites != nil && !slices.Contains(q.sites, opts.SiteID) {
		return "is not asked at this site", nil
	}
	s, msg := q.check(v)
	if msg != "" {
		return msg, nil
	}
	if q.enum != nil && !q.inEnum(s) {
		return q.enumMessage(), nil
	}
	return "", s.text
}

func (q *question) enumMessage() string {
	if len(q.enum) > 10 {
		return "must be one of the choices the form lists"
	}
	vals := make([]string, len(q.enum))
	for i, e := range q.enum {
		vals[i] = e.display
	}
	return "must be one of " + strings.Join(vals, ", ")
}

// decodeAnswer reads one answer with UseNumber. An empty raw is null, as a
// nil json.RawMessage encodes.
func decodeAnswer(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	if v, ok := decodeScalar(bytes.Trim(raw, " \t\r\n")); ok { // JSON's whitespace
		return v, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// Ref is a person ID held by an answer.
type Ref struct {
	Key string
	ID  string
}

// PersonRefs returns the well-formed person IDs that answers give to person
// questions, sorted by key, so the caller can check they exist in the
// tenant. Other answers, and malformed IDs (which Validate reports), are
// skipped.
func (f *Form) PersonRefs(answers map[string]json.RawMessage) []Ref {
	var refs []Ref
	for _, k := range sortedKeys(answers) {
		q := f.questions[k]
		if q == nil || q.xtype != xPerson {
			continue
		}
		var id string
		if json.Unmarshal(answers[k], &id) == nil && ids.Valid(ids.Person, id) {
			refs = append(refs, Ref{Key: k, ID: id})
		}
	}
	return refs
}

// Redact returns the answers that may leave the console: every API
// response, event and webhook goes through it. Answers to x-svc-sensitive
// and x-svc-masked questions are left out, and so are answers to keys the
// form no longer has: nothing says whether the question they answered was
// sensitive, so they fail closed. Stored answers are untouched; the result
// is never nil. The values are shared with answers, not copied.
func (f *Form) Redact(answers map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		if q := f.questions[k]; q != nil && !q.sensitive && !q.masked {
			out[k] = v
		}
	}
	return out
}

// decodeScalar reads the answers most forms get, literals, numbers and
// strings without escapes, as the decoder would, without its buffer: the
// desk reads every answer several times per request (Visible, Required,
// Validate). ok is false for anything else, which the decoder reads.
func decodeScalar(raw []byte) (any, bool) {
	switch string(raw) {
	case "null":
		return nil, true
	case "true":
		return true, true
	case "false":
		return false, true
	}
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return nil, false
		}
		in := raw[1 : len(raw)-1]
		if !utf8.Valid(in) {
			return nil, false
		}
		for _, c := range in {
			if c == '"' || c == '\\' || c < 0x20 {
				return nil, false
			}
		}
		return string(in), true
	}
	if isNumber(raw) {
		return json.Number(raw), true
	}
	return nil, false
}

// isNumber reports whether b is a JSON number (RFC 8259 section 6).
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(b)
}
