package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/problem"
)

// maxBody is the largest request body read, in bytes.
const maxBody = 1 << 20

// query is a request's query string, checked strictly: it must parse, every
// parameter must be one the operation knows, and none may repeat.
type query struct {
	values url.Values
	errs   fieldErrors
	refs   []queryRef // the IDs the filters name, checked by checkFilters
}

// queryRef is an ID a filter names: it must name an object of the tenant.
type queryRef struct {
	param, prefix, id string
}

// parseQuery reads the query string of c. allowed lists the parameters the
// operation takes.
func parseQuery(c echo.Context, allowed ...string) (*query, error) {
	raw := c.Request().URL.RawQuery
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, newError(problem.BadRequest, "The query string is malformed: %v.", err)
	}
	q := &query{values: values}
	textErr := false
	for name, vs := range values {
		known := false
		for _, a := range allowed {
			if a == name {
				known = true
				break
			}
		}
		switch {
		case !known:
			q.errs.add("query."+name, "is not a parameter of this operation")
		case len(vs) > 1:
			q.errs.add("query."+name, "is given more than once")
		case !isText(vs[0]):
			// Neither store takes it (PostgreSQL refuses the bytes,
			// SQLite's full-text search stops at a NUL): refused here, as
			// the client's mistake, before any filter is read.
			q.errs.add("query."+name, "must be UTF-8 text without NUL characters")
			textErr = true
		}
	}
	if textErr {
		return nil, q.errs.err()
	}
	return q, nil
}

// isText reports whether v is valid UTF-8 without a NUL character.
func isText(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsRune(v, 0)
}

func (q *query) get(name string) (string, bool) {
	vs, ok := q.values[name]
	if !ok || len(vs) != 1 {
		return "", false
	}
	return vs[0], true
}

// boolean reads true or false.
func (q *query) boolean(name string) *bool {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil || (v != "true" && v != "false") {
		q.errs.add("query."+name, "must be true or false")
		return nil
	}
	return &b
}

// id reads an ID with the given prefix.
func (q *query) id(name, prefix string) string {
	v, ok := q.get(name)
	if !ok {
		return ""
	}
	if !ids.Valid(prefix, v) {
		q.errs.add("query."+name, "must be a %s ID (%s_ followed by 26 characters)", prefix, prefix)
		return ""
	}
	q.refs = append(q.refs, queryRef{param: name, prefix: prefix, id: v})
	return v
}

// text reads a string of at most max characters.
func (q *query) text(name string, max int) string {
	v, ok := q.get(name)
	if !ok {
		return ""
	}
	if utf8.RuneCountInString(v) > max {
		q.errs.add("query."+name, "must be at most %d characters", max)
		return ""
	}
	return v
}

// body is a JSON request body, read as an object whose fields are taken one
// by one; what is left at the end is a field the operation does not know.
type body struct {
	fields map[string]json.RawMessage
	prefix string
	errs   *fieldErrors
}

// readBody reads c's body: application/json, at most maxBody bytes, a JSON
// object. Operations that take no fields accept an empty body.
func readBody(c echo.Context, optional bool) (*body, error) {
	req := c.Request()
	raw, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, newError(problem.BadRequest, "The body did not arrive within the server's read timeout.")
	}
	if err != nil {
		return nil, newError(problem.BadRequest, "The body could not be read: %v.", err)
	}
	if len(raw) > maxBody {
		return nil, newError(problem.BadRequest, "The body is larger than %d bytes.", maxBody)
	}
	errs := &fieldErrors{}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return &body{fields: map[string]json.RawMessage{}, errs: errs}, nil
		}
		return nil, newError(problem.BadRequest, "The body is empty: send a JSON object with Content-Type: application/json.")
	}
	ct := req.Header.Get(echo.HeaderContentType)
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
		return nil, newError(problem.BadRequest, "Content-Type must be application/json, not %q.", ct)
	}
	if !json.Valid(raw) {
		return nil, newError(problem.BadRequest, "The body is not valid JSON.")
	}
	if !validText(raw) {
		return nil, newError(problem.BadRequest, "The body is not valid UTF-8: it holds a byte sequence that is not UTF-8, or a \\u escape of half a surrogate pair.")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, invalid("body", "must be a JSON object")
	}
	return &body{fields: fields, errs: errs}, nil
}

// validText reports whether a JSON text, already known to be valid JSON, is
// valid UTF-8 and every \u escape in it names a character: a lone
// surrogate (\ud800 without its pair) is no character. encoding/json would
// quietly turn either into U+FFFD and store that, so the text a client sent
// is refused instead of stored changed.
func validText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // raw is valid JSON: a backslash is always followed by an escape
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // high half: its low half must follow
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			if lo := hex4(raw[i+3 : i+7]); lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 6
		case utf16.IsSurrogate(r): // a low half alone
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape, which valid JSON
// guarantees.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

func (b *body) loc(name string) string { return "body." + b.prefix + name }

// take removes and returns a field; null reports a JSON null.
func (b *body) take(name string) (raw json.RawMessage, present, isNull bool) {
	raw, present = b.fields[name]
	if !present {
		return nil, false, false
	}
	delete(b.fields, name)
	return raw, true, string(raw) == "null"
}

// str reads a string field that may not be null.
func (b *body) str(name string) cloud.Optional[string] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[string]{}
	}
	var v string
	if isNull || json.Unmarshal(raw, &v) != nil {
		b.errs.add(b.loc(name), "must be a string")
		return cloud.Optional[string]{}
	}
	return cloud.Some(v)
}

// nullableStr reads a string field where null clears the value ("").
func (b *body) nullableStr(name string) cloud.Optional[string] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[string]{}
	}
	if isNull {
		return cloud.Some("")
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		b.errs.add(b.loc(name), "must be a string or null")
		return cloud.Optional[string]{}
	}
	if v == "" {
		b.errs.add(b.loc(name), "may not be empty: send null to clear it")
		return cloud.Optional[string]{}
	}
	return cloud.Some(v)
}

// boolean reads a true or false field.
func (b *body) boolean(name string) cloud.Optional[bool] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[bool]{}
	}
	var v bool
	if isNull || json.Unmarshal(raw, &v) != nil {
		b.errs.add(b.loc(name), "must be true or false")
		return cloud.Optional[bool]{}
	}
	return cloud.Some(v)
}

// strings reads an array of strings.
func (b *body) strings(name string) cloud.Optional[[]string] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[[]string]{}
	}
	var v []string
	if isNull || json.Unmarshal(raw, &v) != nil {
		b.errs.add(b.loc(name), "must be an array of strings")
		return cloud.Optional[[]string]{}
	}
	if v == nil {
		v = []string{}
	}
	return cloud.Some(v)
}

// object reads a nested object (or null, when nullable) with fn, which
// takes its fields from the nested body.
func (b *body) object(name string, nullable bool, fn func(*body)) (present, isNull bool) {
	raw, ok, null := b.take(name)
	if !ok {
		return false, false
	}
	if null {
		if !nullable {
			b.errs.add(b.loc(name), "must be an object")
		}
		return true, true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		b.errs.add(b.loc(name), "must be an object")
		return true, true
	}
	nested := &body{fields: fields, prefix: b.prefix + name + ".", errs: b.errs}
	fn(nested)
	nested.finish()
	return true, false
}

// finish reports the fields nobody took.
func (b *body) finish() {
	names := make([]string, 0, len(b.fields))
	for name := range b.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.errs.add(b.loc(name), "is not a field of this operation")
	}
	clear(b.fields)
}

// done finishes the body and returns every problem found, or nil.
func (b *body) done() error {
	b.finish()
	return b.errs.err()
}

// merge adds the problems the domain found (from a Validate method) to
// the body's, leaving out fields the body already reported, so one response
// lists every problem once.
func (b *body) merge(err error) error {
	ve, ok := err.(*cloud.ValidationError)
	if !ok {
		return err
	}
	seen := make(map[string]bool, len(*b.errs))
	for _, e := range *b.errs {
		seen[e.Location] = true
	}
	for _, f := range ve.Fields {
		if loc := "body." + f.Field; !seen[loc] {
			b.errs.add(loc, "%s", f.Message)
		}
	}
	return nil
}

// pathID reads a path parameter that must be an ID with the given prefix.
func pathID(c echo.Context, name, prefix string) (string, error) {
	v := c.Param(name)
	if !ids.Valid(prefix, v) {
		return "", invalid("path."+name, "must be a %s ID (%s_ followed by 26 characters)", prefix, prefix)
	}
	return v, nil
}

// timestamp reads an RFC 3339 date-time; with nullable, null gives a set
// nil value.
func (b *body) timestamp(name string, nullable bool) cloud.Optional[*time.Time] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[*time.Time]{}
	}
	if isNull {
		if !nullable {
			b.errs.add(b.loc(name), "must be a date-time such as 2026-05-01T09:30:00Z")
			return cloud.Optional[*time.Time]{}
		}
		return cloud.Some[*time.Time](nil)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		b.errs.add(b.loc(name), "must be a date-time such as 2026-05-01T09:30:00Z")
		return cloud.Optional[*time.Time]{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 || t.Year() > 9999 {
		b.errs.add(b.loc(name), "must be an RFC 3339 date-time with a zone, such as 2026-05-01T09:30:00Z")
		return cloud.Optional[*time.Time]{}
	}
	return cloud.Some(&t)
}

// integer reads a whole number in [min, max].
func (b *body) integer(name string, min, max int) cloud.Optional[int] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[int]{}
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// json.Number also takes a number in a string ("10"), which is not an
	// integer.
	if isNull || bytes.HasPrefix(raw, []byte(`"`)) || dec.Decode(&n) != nil {
		b.errs.add(b.loc(name), "must be an integer from %d to %d", min, max)
		return cloud.Optional[int]{}
	}
	v, err := strconv.Atoi(n.String())
	if err != nil || v < min || v > max {
		b.errs.add(b.loc(name), "must be an integer from %d to %d", min, max)
		return cloud.Optional[int]{}
	}
	return cloud.Some(v)
}

// rawObject reads an object whose members the domain checks, kept as raw
// JSON per key.
func (b *body) rawObject(name string) cloud.Optional[map[string]json.RawMessage] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[map[string]json.RawMessage]{}
	}
	var v map[string]json.RawMessage
	if isNull || json.Unmarshal(raw, &v) != nil || v == nil {
		b.errs.add(b.loc(name), "must be an object")
		return cloud.Optional[map[string]json.RawMessage]{}
	}
	return cloud.Some(v)
}

// objects reads an array of objects, each with fn(i, nested body); it
// returns how many there were and whether the field was present.
func (b *body) objects(name string, fn func(i int, nb *body)) (n int, present bool) {
	raw, ok, isNull := b.take(name)
	if !ok {
		return 0, false
	}
	var items []json.RawMessage
	if isNull || json.Unmarshal(raw, &items) != nil {
		b.errs.add(b.loc(name), "must be an array of objects")
		return 0, true
	}
	for i, item := range items {
		loc := fmt.Sprintf("%s[%d]", name, i)
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil || fields == nil {
			b.errs.add(b.loc(loc), "must be an object")
			continue
		}
		nested := &body{fields: fields, prefix: b.prefix + loc + ".", errs: b.errs}
		fn(i, nested)
		nested.finish()
	}
	return len(items), true
}
