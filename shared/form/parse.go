package form

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/svc-vms/svc/shared/ids"
)

// Limits of a form schema.
const (
	// MaxQuestions is the most questions (properties) a form may have.
	MaxQuestions = 100
	// MaxEnum is the most values an enum may list.
	MaxEnum = 200
	// MaxRules is the most allOf items a form may have.
	MaxRules = 100
	// MaxMaxLength is the largest maxLength a string question may set.
	MaxMaxLength = 10000
	// DefaultMaxLength limits a string question that sets no maxLength, so
	// that no answer is unbounded.
	DefaultMaxLength = 2000
)

// SchemaURI is the only $schema a form may declare.
const SchemaURI = "https://json-schema.org/draft/2020-12/schema"

// maxDepth is deeper than any schema of the subset nests
// (/allOf/0/if/properties/k/const is 6), so the reader stops early on
// hostile input instead of recursing.
const maxDepth = 12

// Lengths of the texts a schema holds, in characters.
const (
	maxTitle       = 200
	maxDescription = 2000
	maxLabel       = 200
	maxUnit        = 40
	maxConsentText = 10000
	maxPattern     = 1000
)

const (
	typeString  = "string"
	typeBoolean = "boolean"
	typeInteger = "integer"
	typeNumber  = "number"
)

// Values of x-svc-type.
const (
	xPerson    = "person"
	xPhone     = "phone"
	xText      = "text"
	xLongText  = "long_text"
	xChoice    = "choice"
	xYesNo     = "yes_no"
	xSignature = "signature"
	xPhoto     = "photo"
	xConsent   = "consent"
)

// xTypes maps each x-svc-type to the question type it needs ("" for any).
var xTypes = map[string]string{
	xPerson: typeString, xPhone: typeString, xText: typeString, xLongText: typeString,
	xSignature: typeString, xPhoto: typeString, xChoice: "",
	xYesNo: typeBoolean, xConsent: typeBoolean,
}

const (
	formatEmail    = "email"
	formatDate     = "date"
	formatDateTime = "date-time"
	formatURI      = "uri"
)

var keyPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

var rootKeywords = map[string]bool{
	"$schema": true, "type": true, "title": true, "description": true,
	"properties": true, "required": true, "allOf": true,
	"additionalProperties": true, "x-svc-order": true,
}

// numeric stands for integer and number in questionKeywords.
const numeric = "numeric"

// questionKeywords maps each keyword a question may use to the type it
// applies to ("" for every type).
var questionKeywords = map[string]string{
	"type": "", "title": "", "description": "", "enum": "",
	"x-svc-type": "", "x-svc-labels": "", "x-svc-show-if": "", "x-svc-sites": "",
	"x-svc-visitor": "", "x-svc-sensitive": "", "x-svc-masked": "",
	"maxLength": typeString, "minLength": typeString, "pattern": typeString, "format": typeString,
	"minimum": numeric, "maximum": numeric, "x-svc-unit": numeric,
	"x-svc-consent-text": typeBoolean,
}

// Parse checks a form schema and returns it. Anything outside the subset
// described in the package documentation is refused with a *SchemaError
// (wrapping ErrInvalidSchema) naming the JSON pointer of the first problem.
// Duplicate object keys and invalid UTF-8 are refused too: they would make
// the schema mean different things to different readers.
func Parse(schema []byte) (*Form, error) {
	tree, err := decodeTree(schema)
	if err != nil {
		return nil, err
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, schemaErr("", "must be a JSON object")
	}
	f := &Form{questions: map[string]*question{}}
	if err := f.parseRoot(root); err != nil {
		return nil, err
	}
	if f.schema, err = canonical(root); err != nil {
		return nil, fmt.Errorf("encode form schema: %w", err)
	}
	if f.public, err = canonical(f.publicTree(root)); err != nil {
		return nil, fmt.Errorf("encode public form: %w", err)
	}
	return f, nil
}

// decodeTree reads data into maps, slices, strings, bools, nils and
// json.Numbers (so number text is kept), refusing duplicate keys.
func decodeTree(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, schemaErr("", "is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, schemaErr("", "has more after the JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, ptr string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, schemaErr(ptr, "nests deeper than a form schema can")
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, schemaErr(ptr, "is not valid JSON: the document ends too soon")
	}
	if err != nil {
		return nil, schemaErr(ptr, "is not valid JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, schemaErr(ptr, "is not valid JSON: %v", err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, schemaErr(ptr, "is not valid JSON: a key is not a string")
				}
				p := ptr + "/" + escapePointer(k)
				if strings.IndexByte(k, 0) >= 0 {
					return nil, schemaErr(p, "has a key with the NUL character (U+0000)")
				}
				if _, dup := obj[k]; dup {
					return nil, schemaErr(p, "repeats a key of the same object")
				}
				if obj[k], err = readValue(dec, p, depth+1); err != nil {
					return nil, err
				}
			}
			if end, err := dec.Token(); err != nil || end != json.Delim('}') {
				return nil, schemaErr(ptr, "is not valid JSON: the object does not end")
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := readValue(dec, ptr+"/"+strconv.Itoa(i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if end, err := dec.Token(); err != nil || end != json.Delim(']') {
				return nil, schemaErr(ptr, "is not valid JSON: the array does not end")
			}
			return arr, nil
		}
		return nil, schemaErr(ptr, "is not valid JSON")
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			return nil, schemaErr(ptr, "may not contain the NUL character (U+0000)")
		}
		return t, nil
	default: // json.Number, bool, nil
		return t, nil
	}
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func (f *Form) parseRoot(root map[string]any) error {
	for _, k := range sortedKeys(root) {
		if !rootKeywords[k] {
			return schemaErr("/"+escapePointer(k), "is not a keyword forms support")
		}
	}
	t, ok := root["type"]
	if !ok {
		return schemaErr("/type", `is required and must be "object"`)
	}
	if t != "object" {
		return schemaErr("/type", `must be "object"`)
	}
	if v, ok := root["$schema"]; ok && v != SchemaURI {
		return schemaErr("/$schema", "must be %s when given", SchemaURI)
	}
	if v, ok := root["additionalProperties"]; ok && v != false {
		return schemaErr("/additionalProperties", "must be false when given: keys outside the form are always refused")
	}
	if err := checkText(root, "title", "", maxTitle); err != nil {
		return err
	}
	if err := checkText(root, "description", "", maxDescription); err != nil {
		return err
	}

	pv, ok := root["properties"]
	if !ok {
		return schemaErr("/properties", "is required (an empty object for a form without questions)")
	}
	props, ok := pv.(map[string]any)
	if !ok {
		return schemaErr("/properties", "must be an object")
	}
	if len(props) > MaxQuestions {
		return schemaErr("/properties", "may hold at most %d questions", MaxQuestions)
	}
	for _, k := range sortedKeys(props) {
		ptr := "/properties/" + escapePointer(k)
		if !keyPattern.MatchString(k) {
			return schemaErr(ptr, "is not a valid question key: lowercase letters, digits and underscores, starting with a letter, at most 40 characters")
		}
		q, err := parseQuestion(k, props[k], ptr)
		if err != nil {
			return err
		}
		f.questions[k] = q
	}

	ov, ok := root["x-svc-order"]
	if !ok {
		return schemaErr("/x-svc-order", "is required: it lists every question key in screen order")
	}
	order, err := f.keyList(ov, "/x-svc-order")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(f.questions) {
		if !slices.Contains(order, k) {
			return schemaErr("/x-svc-order", "leaves out the question %s", k)
		}
	}
	f.order = order

	if rv, ok := root["required"]; ok {
		if f.required, err = f.keyList(rv, "/required"); err != nil {
			return err
		}
	}
	for i, k := range f.order {
		if err := f.checkShowIf(f.questions[k], i); err != nil {
			return err
		}
	}
	if av, ok := root["allOf"]; ok {
		if err := f.parseRules(av); err != nil {
			return err
		}
	}
	return nil
}

// keyList reads an array of unique question keys.
func (f *Form) keyList(v any, ptr string) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, schemaErr(ptr, "must be an array of question keys")
	}
	keys := make([]string, 0, len(arr))
	for i, e := range arr {
		p := ptr + "/" + strconv.Itoa(i)
		k, ok := e.(string)
		if !ok {
			return nil, schemaErr(p, "must be a question key")
		}
		if f.questions[k] == nil {
			return nil, schemaErr(p, "names no question of this form")
		}
		if j := slices.Index(keys, k); j >= 0 {
			return nil, schemaErr(p, "repeats %s/%d", ptr, j)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// checkText checks the optional text keyword name of obj.
func checkText(obj map[string]any, name, ptr string, max int) error {
	v, ok := obj[name]
	if !ok {
		return nil
	}
	_, err := text(v, ptr+"/"+name, max)
	return err
}

// text reads a non-empty string of at most max characters.
func text(v any, ptr string, max int) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", schemaErr(ptr, "must be a string")
	}
	if strings.TrimSpace(s) == "" {
		return "", schemaErr(ptr, "may not be blank")
	}
	if utf8.RuneCountInString(s) > max {
		return "", schemaErr(ptr, "must be at most %d characters", max)
	}
	return s, nil
}

// count reads a non-negative integer of at most max.
func count(v any, ptr string, max int) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, schemaErr(ptr, "must be an integer")
	}
	i, whole, inRange := parseInteger(string(n))
	if !whole || !inRange || i < 0 || i > int64(max) {
		return 0, schemaErr(ptr, "must be an integer from 0 to %d", max)
	}
	return int(i), nil
}

// question is one property of a form, checked.
type question struct {
	key   string
	typ   string
	xtype string
	// raw is the property as written, for the public form.
	raw map[string]any

	maxLen, minLen int
	pattern        *regexp.Regexp
	format         string

	minInt, maxInt     *int64
	minNum, maxNum     *float64
	minText, maxText   string
	enum               []scalar
	sites              []string
	visitor, sensitive bool
	masked             bool
	showIf             map[string]any
	// showField and showValue are showIf read against the other
	// questions (checkShowIf): shown when showField is answered showValue.
	showField string
	showValue scalar

	// The texts a screen shows; "" when absent.
	title, description, unit, consentText string
	// labels maps a value's scalar key to its x-svc-labels label.
	labels map[string]string
}

func parseQuestion(key string, v any, ptr string) (*question, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, schemaErr(ptr, "must be an object")
	}
	q := &question{key: key, raw: obj, maxLen: DefaultMaxLength}
	switch t := obj["type"]; t {
	case typeString, typeBoolean, typeInteger, typeNumber:
		q.typ = t.(string)
	case nil:
		return nil, schemaErr(ptr+"/type", "is required: string, boolean, integer or number")
	default:
		return nil, schemaErr(ptr+"/type", "must be string, boolean, integer or number")
	}
	isNumeric := q.typ == typeInteger || q.typ == typeNumber
	for _, k := range sortedKeys(obj) {
		applies, known := questionKeywords[k]
		p := ptr + "/" + escapePointer(k)
		switch {
		case !known:
			return nil, schemaErr(p, "is not a keyword forms support")
		case applies == numeric && !isNumeric:
			return nil, schemaErr(p, "applies only to integer and number questions")
		case applies != "" && applies != numeric && applies != q.typ:
			return nil, schemaErr(p, "applies only to %s questions", applies)
		}
	}
	if v, ok := obj["x-svc-type"]; ok {
		s, _ := v.(string)
		need, known := xTypes[s]
		if !known {
			return nil, schemaErr(ptr+"/x-svc-type", "must be one of %s", strings.Join(sortedKeys(xTypes), ", "))
		}
		if need != "" && need != q.typ {
			return nil, schemaErr(ptr+"/x-svc-type", "%s questions must have type %s", s, need)
		}
		q.xtype = s
	}
	if err := checkText(obj, "title", ptr, maxTitle); err != nil {
		return nil, err
	}
	if err := checkText(obj, "description", ptr, maxDescription); err != nil {
		return nil, err
	}
	if err := q.parseString(obj, ptr); err != nil {
		return nil, err
	}
	if err := q.parseBounds(obj, ptr); err != nil {
		return nil, err
	}
	if err := checkText(obj, "x-svc-unit", ptr, maxUnit); err != nil {
		return nil, err
	}
	if err := checkText(obj, "x-svc-consent-text", ptr, maxConsentText); err != nil {
		return nil, err
	}
	// Checked above: each is absent or a string.
	q.title, _ = obj["title"].(string)
	q.description, _ = obj["description"].(string)
	q.unit, _ = obj["x-svc-unit"].(string)
	q.consentText, _ = obj["x-svc-consent-text"].(string)
	for _, flag := range []struct {
		name string
		to   *bool
	}{{"x-svc-visitor", &q.visitor}, {"x-svc-sensitive", &q.sensitive}, {"x-svc-masked", &q.masked}} {
		if fv, ok := obj[flag.name]; ok {
			b, ok := fv.(bool)
			if !ok {
				return nil, schemaErr(ptr+"/"+flag.name, "must be true or false")
			}
			*flag.to = b
		}
	}
	if err := q.parseSites(obj, ptr); err != nil {
		return nil, err
	}
	if sv, ok := obj["x-svc-show-if"]; ok {
		p := ptr + "/x-svc-show-if"
		si, ok := sv.(map[string]any)
		if !ok {
			return nil, schemaErr(p, `must be an object {"field": <question key>, "equals": <value>}`)
		}
		for _, k := range sortedKeys(si) {
			if k != "field" && k != "equals" {
				return nil, schemaErr(p+"/"+escapePointer(k), "is not a member of x-svc-show-if: only field and equals are")
			}
		}
		if _, ok := si["field"].(string); !ok {
			return nil, schemaErr(p+"/field", "is required and must be a question key")
		}
		if _, ok := si["equals"]; !ok {
			return nil, schemaErr(p+"/equals", "is required")
		}
		q.showIf = si // checked against the other questions by checkShowIf
	}
	if err := q.parseEnum(obj, ptr); err != nil {
		return nil, err
	}
	if err := q.parseLabels(obj, ptr); err != nil {
		return nil, err
	}
	return q, q.checkXType(obj, ptr)
}

func (q *question) parseString(obj map[string]any, ptr string) error {
	if v, ok := obj["maxLength"]; ok {
		n, err := count(v, ptr+"/maxLength", MaxMaxLength)
		if err != nil {
			return err
		}
		if n == 0 {
			return schemaErr(ptr+"/maxLength", "must be at least 1: empty answers are refused")
		}
		q.maxLen = n
	}
	if v, ok := obj["minLength"]; ok {
		n, err := count(v, ptr+"/minLength", MaxMaxLength)
		if err != nil {
			return err
		}
		if n > q.maxLen {
			return schemaErr(ptr+"/minLength", "must not exceed the maximum length (%d)", q.maxLen)
		}
		q.minLen = n
	}
	if v, ok := obj["pattern"]; ok {
		s, err := text(v, ptr+"/pattern", maxPattern)
		if err != nil {
			return err
		}
		if q.pattern, err = regexp.Compile(s); err != nil {
			return schemaErr(ptr+"/pattern", "is not a valid regular expression (Go RE2 syntax): %v", err)
		}
	}
	if v, ok := obj["format"]; ok {
		switch v {
		case formatEmail, formatDate, formatDateTime, formatURI:
			q.format = v.(string)
		default:
			return schemaErr(ptr+"/format", "must be email, date, date-time or uri")
		}
	}
	return nil
}

func (q *question) parseBounds(obj map[string]any, ptr string) error {
	for _, b := range []struct {
		name string
		i    **int64
		f    **float64
		text *string
	}{{"minimum", &q.minInt, &q.minNum, &q.minText}, {"maximum", &q.maxInt, &q.maxNum, &q.maxText}} {
		v, ok := obj[b.name]
		if !ok {
			continue
		}
		p := ptr + "/" + b.name
		n, ok := v.(json.Number)
		if !ok {
			return schemaErr(p, "must be a number")
		}
		if q.typ == typeInteger {
			i, whole, inRange := parseInteger(string(n))
			if !whole || !inRange {
				return schemaErr(p, "must be an integer between %d and %d", -MaxSafeInteger, MaxSafeInteger)
			}
			*b.i, *b.text = &i, strconv.FormatInt(i, 10)
			continue
		}
		f, ok := parseNumber(string(n))
		if !ok {
			return schemaErr(p, "is too large to be a number")
		}
		*b.f, *b.text = &f, string(n)
	}
	if q.minInt != nil && q.maxInt != nil && *q.minInt > *q.maxInt ||
		q.minNum != nil && q.maxNum != nil && *q.minNum > *q.maxNum {
		return schemaErr(ptr+"/minimum", "must not exceed maximum")
	}
	return nil
}

func (q *question) parseSites(obj map[string]any, ptr string) error {
	v, ok := obj["x-svc-sites"]
	if !ok {
		return nil
	}
	p := ptr + "/x-svc-sites"
	arr, ok := v.([]any)
	if !ok {
		return schemaErr(p, "must be an array of site IDs")
	}
	if len(arr) == 0 {
		return schemaErr(p, "must list at least one site: leave it out to ask the question at every site")
	}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok || !ids.Valid(ids.Site, s) {
			return schemaErr(p+"/"+strconv.Itoa(i), "must be a site ID (site_ followed by 26 characters)")
		}
		if j := slices.Index(q.sites, s); j >= 0 {
			return schemaErr(p+"/"+strconv.Itoa(i), "repeats %s/%d", p, j)
		}
		q.sites = append(q.sites, s)
	}
	return nil
}

func (q *question) parseEnum(obj map[string]any, ptr string) error {
	v, ok := obj["enum"]
	if !ok {
		return nil
	}
	p := ptr + "/enum"
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 || len(arr) > MaxEnum {
		return schemaErr(p, "must be an array of 1 to %d values", MaxEnum)
	}
	for i, e := range arr {
		ep := p + "/" + strconv.Itoa(i)
		if e == nil {
			return schemaErr(ep, "may not be null: null is always accepted as no answer")
		}
		s, msg := q.check(e)
		if msg != "" {
			return schemaErr(ep, "is not a valid answer to this question: it %s", msg)
		}
		if j := slices.IndexFunc(q.enum, func(o scalar) bool { return o.key == s.key }); j >= 0 {
			return schemaErr(ep, "repeats %s/%d", p, j)
		}
		q.enum = append(q.enum, s)
	}
	return nil
}

// value reads v as a value of q's type that q accepts (for a const or an
// x-svc-show-if equals): one that could be an answer.
func (q *question) value(v any, ptr string) (scalar, error) {
	s, msg := q.check(v)
	if msg != "" {
		return scalar{}, schemaErr(ptr, "is not a valid answer to %s: it %s", q.key, msg)
	}
	if q.enum != nil && !q.inEnum(s) {
		return scalar{}, schemaErr(ptr, "is not one of the values of %s", q.key)
	}
	return s, nil
}

func (q *question) inEnum(s scalar) bool {
	return slices.ContainsFunc(q.enum, func(e scalar) bool { return e.key == s.key })
}

func (q *question) parseLabels(obj map[string]any, ptr string) error {
	v, ok := obj["x-svc-labels"]
	if !ok {
		return nil
	}
	p := ptr + "/x-svc-labels"
	labels, ok := v.(map[string]any)
	if !ok {
		return schemaErr(p, "must be an object mapping values to labels")
	}
	if q.enum == nil && q.typ != typeBoolean {
		return schemaErr(p, "needs an enum: labels name the enum's values")
	}
	seen := map[string]string{}
	for _, k := range sortedKeys(labels) {
		lp := p + "/" + escapePointer(k)
		var s scalar
		var msg string
		if q.typ == typeString {
			s, msg = q.check(k)
		} else {
			var kv any
			dec := json.NewDecoder(strings.NewReader(k))
			dec.UseNumber()
			if err := dec.Decode(&kv); err != nil || dec.More() {
				msg = "is not the JSON text of a value"
			} else {
				s, msg = q.check(kv)
			}
		}
		if msg == "" && q.enum != nil && !q.inEnum(s) {
			msg = "is not one of the enum's values"
		}
		if msg != "" {
			return schemaErr(lp, "does not name a value of this question (%s)", msg)
		}
		if other, dup := seen[s.key]; dup {
			return schemaErr(lp, "labels the same value as %s", other)
		}
		seen[s.key] = k
		label, err := text(labels[k], lp, maxLabel)
		if err != nil {
			return err
		}
		if q.labels == nil {
			q.labels = map[string]string{}
		}
		q.labels[s.key] = label
	}
	return nil
}

// checkXType checks the rules that depend on x-svc-type.
func (q *question) checkXType(obj map[string]any, ptr string) error {
	switch q.xtype {
	case xPerson:
		for _, k := range []string{"enum", "maxLength", "minLength", "pattern", "format"} {
			if _, ok := obj[k]; ok {
				return schemaErr(ptr+"/"+k, "does not apply to a person question: its answer is a person ID")
			}
		}
		if q.visitor {
			// A visitor cannot look people up, and answers would tell
			// which person IDs exist.
			return schemaErr(ptr+"/x-svc-visitor", "must not be true for a person question: visitors cannot look people up")
		}
	case xPhone:
		if q.format != "" {
			return schemaErr(ptr+"/format", "does not apply to a phone question: its answer is an E.164 number")
		}
	case xChoice:
		if q.enum == nil {
			return schemaErr(ptr+"/enum", "is required for a choice question")
		}
	case xConsent:
		if _, ok := obj["x-svc-consent-text"]; !ok {
			return schemaErr(ptr+"/x-svc-consent-text", "is required for a consent question")
		}
	}
	return nil
}

// checkShowIf checks q's x-svc-show-if against the other questions; i is
// q's place in x-svc-order. Naming only earlier questions keeps conditions
// on screen order and rules out cycles.
func (f *Form) checkShowIf(q *question, i int) error {
	if q.showIf == nil {
		return nil
	}
	p := "/properties/" + q.key + "/x-svc-show-if"
	field := q.showIf["field"].(string)
	other := f.questions[field]
	switch {
	case other == nil:
		return schemaErr(p+"/field", "names no question of this form")
	case !slices.Contains(f.order[:i], field):
		return schemaErr(p+"/field", "must name a question earlier in x-svc-order")
	case q.visitor && !other.visitor:
		return schemaErr(p+"/field", "must name a visitor question: the visitor never sees %s", field)
	}
	v, err := other.value(q.showIf["equals"], p+"/equals")
	q.showField, q.showValue = field, v
	return err
}

// rule is one allOf item: when every if question has its value, the then
// questions are required.
type rule struct {
	ifKeys []string
	conds  []cond         // the if, read: one per key of ifKeys, in its order
	raw    map[string]any // the item's if, as written
	then   []string
}

// cond holds when question key is answered val.
type cond struct {
	key string
	val scalar
}

func (f *Form) parseRules(v any) error {
	items, ok := v.([]any)
	if !ok {
		return schemaErr("/allOf", "must be an array of if/then items")
	}
	if len(items) > MaxRules {
		return schemaErr("/allOf", "may hold at most %d items", MaxRules)
	}
	for i, item := range items {
		r, err := f.parseRule(item, "/allOf/"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		f.rules = append(f.rules, r)
	}
	return nil
}

func (f *Form) parseRule(v any, ptr string) (rule, error) {
	obj, err := exactly(v, ptr, `{"if": ..., "then": ...}`, "if", "then")
	if err != nil {
		return rule{}, err
	}
	ifObj, err := exactly(obj["if"], ptr+"/if", `{"properties": ..., "required": [...]}`, "properties", "required")
	if err != nil {
		return rule{}, err
	}
	r := rule{raw: ifObj}
	props, ok := ifObj["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return rule{}, schemaErr(ptr+"/if/properties", `must be an object {<question key>: {"const": <value>}, ...}`)
	}
	for _, k := range sortedKeys(props) {
		p := ptr + "/if/properties/" + escapePointer(k)
		q := f.questions[k]
		if q == nil {
			return rule{}, schemaErr(p, "names no question of this form")
		}
		c, err := exactly(props[k], p, `{"const": <value>}`, "const")
		if err != nil {
			return rule{}, err
		}
		v, err := q.value(c["const"], p+"/const")
		if err != nil {
			return rule{}, err
		}
		r.ifKeys = append(r.ifKeys, k)
		r.conds = append(r.conds, cond{key: k, val: v})
	}
	req, err := f.keyList(ifObj["required"], ptr+"/if/required")
	if err != nil {
		return rule{}, err
	}
	slices.Sort(req)
	if !slices.Equal(req, r.ifKeys) {
		// Without required, an unanswered question would meet the
		// condition (JSON Schema's if holds on an absent property).
		return rule{}, schemaErr(ptr+"/if/required", "must list exactly the keys of if/properties")
	}
	then, err := exactly(obj["then"], ptr+"/then", `{"required": [...]}`, "required")
	if err != nil {
		return rule{}, err
	}
	if r.then, err = f.keyList(then["required"], ptr+"/then/required"); err != nil {
		return rule{}, err
	}
	if len(r.then) == 0 {
		return rule{}, schemaErr(ptr+"/then/required", "must list at least one question key")
	}
	return r, nil
}

// exactly reads v as an object with exactly the members names.
func exactly(v any, ptr, shape string, names ...string) (map[string]any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, schemaErr(ptr, "must be an object %s", shape)
	}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(names, k) {
			return nil, schemaErr(ptr+"/"+escapePointer(k), "is not supported here: the shape is %s", shape)
		}
	}
	for _, k := range names {
		if _, ok := obj[k]; !ok {
			return nil, schemaErr(ptr+"/"+k, "is required: the shape is %s", shape)
		}
	}
	return obj, nil
}

// canonical encodes a decoded tree compactly with keys sorted, numbers as
// written and no HTML escaping: equal schemas give equal bytes.
func canonical(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
