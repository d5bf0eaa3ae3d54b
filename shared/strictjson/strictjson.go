// Package strictjson decodes a JSON document field by field, as a person
// wrote it: every unknown field, value of the wrong type and bad value is
// a Problem with its JSON path ("gates[1].relay.pin"), and decoding goes
// on past the first, so one pass reports everything there is to fix. The
// appliance's configuration file (edge/config) and the hardware document
// (shared/hardware), which the cloud's API and the appliance both read,
// decode with it, so the two say the same words about the same mistake.
//
// It may import the standard library only.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// CommentKey is a key any object may hold, with a string for the reader of
// the document, when Decoder.Comments is set: JSON has no comments, and a
// generated file explains itself this way. It is ignored.
const CommentKey = "//"

// Problem is one thing wrong with a document.
type Problem struct {
	// Path is the JSON path of the value ("gates[0].relay.pin"), or "" for
	// the document as a whole.
	Path string
	// Msg says what is wrong.
	Msg string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Decoder collects the problems of one document. The zero value is ready
// to use.
type Decoder struct {
	// Problems are those found so far, in the order found.
	Problems []Problem
	// Comments lets every object hold CommentKey with a string.
	Comments bool
}

// Field decodes the value of one key of an object, found at path.
type Field func(path string, v any)

// Add records a problem at path.
func (d *Decoder) Add(path, format string, args ...any) {
	d.Problems = append(d.Problems, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Has reports whether a problem at path was found already.
func (d *Decoder) Has(path string) bool {
	return slices.ContainsFunc(d.Problems, func(p Problem) bool { return p.Path == path })
}

// Err returns the first problem as an error, or nil when there is none.
func (d *Decoder) Err() error {
	if len(d.Problems) == 0 {
		return nil
	}
	return errors.New(d.Problems[0].String())
}

// Parse reads data as one JSON value, numbers kept as json.Number. It
// returns false, with a problem at "", when data is not exactly one JSON
// value.
func (d *Decoder) Parse(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		d.Add("", "not JSON: %s", jsonError(err, data))
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		d.Add("", "not JSON: data after the top-level value")
		return nil, false
	}
	return v, true
}

// Join is the path of key in the object at path; either may be "" (the
// document as a whole).
func Join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	}
	return path + "." + key
}

// Object decodes v as an object whose keys are those of fields, in sorted
// key order so problems come out the same way every time; any other key is
// an unknown field. It reports whether v was an object.
func (d *Decoder) Object(path string, v any, fields map[string]Field) bool {
	m, ok := v.(map[string]any)
	if !ok {
		d.Add(path, "must be an object, not %s", Kind(v))
		return false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := Join(path, k)
		f, ok := fields[k]
		switch {
		case k == CommentKey && d.Comments:
			if _, ok := m[k].(string); !ok {
				d.Add(p, "a comment must be a string, not %s", Kind(m[k]))
			}
		case !ok:
			d.Add(p, "unknown field")
		default:
			f(p, m[k])
		}
	}
	return true
}

// Array decodes v as an array, calling each for every element with its
// path. It reports whether v was an array.
func (d *Decoder) Array(path string, v any, each func(path string, v any)) bool {
	a, ok := v.([]any)
	if !ok {
		d.Add(path, "must be an array, not %s", Kind(v))
		return false
	}
	for i, e := range a {
		each(fmt.Sprintf("%s[%d]", path, i), e)
	}
	return true
}

// Str decodes a string into dst.
func (d *Decoder) Str(dst *string) Field {
	return func(p string, v any) {
		s, ok := v.(string)
		if !ok {
			d.Add(p, "must be a string, not %s", Kind(v))
			return
		}
		*dst = s
	}
}

// Bool decodes true or false into dst.
func (d *Decoder) Bool(dst *bool) Field {
	return func(p string, v any) {
		b, ok := v.(bool)
		if !ok {
			d.Add(p, "must be true or false, not %s", Kind(v))
			return
		}
		*dst = b
	}
}

// Int decodes a whole number that fits 32 bits into dst.
func (d *Decoder) Int(dst *int) Field {
	return func(p string, v any) {
		n, ok := v.(json.Number)
		if !ok {
			d.Add(p, "must be a number, not %s", Kind(v))
			return
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			d.Add(p, "%s: must be a whole number", n)
			return
		}
		*dst = int(i)
	}
}

// Duration decodes a Go duration string ("500ms") into dst.
func (d *Decoder) Duration(dst *time.Duration) Field {
	return func(p string, v any) {
		s, ok := v.(string)
		if !ok {
			d.Add(p, `must be a duration string such as "500ms", not %s`, Kind(v))
			return
		}
		t, err := time.ParseDuration(s)
		if err != nil {
			d.Add(p, `%q: must be a duration such as "500ms"`, s)
			return
		}
		*dst = t
	}
}

// Kind names a JSON value's type for a problem.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonError adds the line and column to a syntax error.
func jsonError(err error, data []byte) string {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(data)) {
		before := data[:se.Offset]
		line := bytes.Count(before, []byte("\n")) + 1
		col := int(se.Offset) - (bytes.LastIndexByte(before, '\n') + 1)
		return fmt.Sprintf("line %d, column %d: %v", line, col, err)
	}
	if errors.Is(err, io.EOF) {
		return "empty document"
	}
	return err.Error()
}
