package config

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

	"github.com/svc-vms/svc/gate/relay"
)

// decoder walks the document as generic JSON values, so that every unknown
// field and every value of the wrong type is reported with its path, and
// collects problems instead of stopping at the first.
type decoder struct {
	problems []Problem
	env      map[string]string // path → variable it came from
}

func (d *decoder) add(path, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: path, Env: d.env[path], Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	return &Error{Problems: d.problems}
}

// field is how one key of an object is decoded.
type field func(path string, v any)

// document decodes data into a Config, or returns nil when it is not one
// JSON object.
func (d *decoder) document(data []byte) *Config {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		d.add("", "not JSON: %s", jsonError(err, data))
		return nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		d.add("", "not JSON: data after the top-level object")
		return nil
	}
	var c Config
	ok := d.object("", v, map[string]field{
		"site": func(p string, v any) {
			d.object(p, v, map[string]field{
				"mode":    d.str(&c.Site.Mode),
				"org_id":  d.str(&c.Site.OrgID),
				"site_id": d.str(&c.Site.SiteID),
			})
		},
		"edge_id": d.str(&c.EdgeID),
		"broker": func(p string, v any) {
			d.object(p, v, map[string]field{
				"url":           d.str(&c.Broker.URL),
				"username":      d.str(&c.Broker.Username),
				"password":      d.str(&c.Broker.Password),
				"password_file": d.str(&c.Broker.PasswordFile),
				"ca": func(p string, v any) {
					var s string
					d.str(&s)(p, v)
					c.Broker.CA = []byte(s)
				},
				"ca_file": d.str(&c.Broker.CAFile),
			})
		},
		"data_dir":   d.str(&c.DataDir),
		"cache_path": d.str(&c.CachePath),
		"listen":     d.str(&c.Listen),
		"gates": func(p string, v any) {
			d.array(p, v, func(p string, v any) {
				c.Gates = append(c.Gates, d.gate(p, v))
			})
		},
		"kiosk": func(p string, v any) {
			if v == nil {
				return
			}
			c.Kiosk = &Kiosk{}
			d.object(p, v, map[string]field{
				"listen": d.str(&c.Kiosk.Listen),
				"languages": func(p string, v any) {
					d.array(p, v, func(p string, v any) {
						var l string
						d.str(&l)(p, v)
						c.Kiosk.Languages = append(c.Kiosk.Languages, l)
					})
				},
				"label": d.str(&c.Kiosk.Label),
			})
		},
	})
	if !ok {
		return nil
	}
	return &c
}

func (d *decoder) gate(path string, v any) Gate {
	var g Gate
	d.object(path, v, map[string]field{
		"gate_id": d.str(&g.ID),
		"readers": func(p string, v any) {
			d.array(p, v, func(p string, v any) {
				var r Reader
				d.object(p, v, map[string]field{
					"kind":   d.str(&r.Kind),
					"device": d.str(&r.Device),
					"baud":   d.integer(&r.Baud),
					"listen": d.str(&r.Listen),
				})
				g.Readers = append(g.Readers, r)
			})
		},
		"relay": func(p string, v any) {
			d.object(p, v, map[string]field{
				"pin":        d.str(&g.Relay.Pin),
				"active_low": d.boolean(&g.Relay.ActiveLow),
				"pulse":      d.duration(&g.Relay.Pulse),
			})
		},
		"door": func(p string, v any) {
			if v == nil {
				return
			}
			g.Door = &relay.DoorConfig{}
			d.object(p, v, map[string]field{
				"pin":        d.str(&g.Door.Pin),
				"active_low": d.boolean(&g.Door.ActiveLow),
				"pull":       d.str(&g.Door.Pull),
				"poll":       d.duration(&g.Door.Poll),
			})
		},
		"when_stale": func(p string, v any) {
			var s string
			d.str(&s)(p, v)
			g.WhenStale = WhenStale(s)
		},
	})
	return g
}

// object decodes v as an object whose keys are those of fields, in sorted
// key order so problems come out the same way every time. It reports
// whether v was an object.
func (d *decoder) object(path string, v any, fields map[string]field) bool {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be an object, not %s", kind(v))
		return false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		f, ok := fields[k]
		switch {
		case k == CommentKey:
			if _, ok := m[k].(string); !ok {
				d.add(p, "a comment must be a string, not %s", kind(m[k]))
			}
		case !ok:
			d.add(p, "unknown field")
		default:
			f(p, m[k])
		}
	}
	return true
}

// CommentKey is a key any object of the file may hold, with a string for
// the reader of the file: JSON has no comments, and a generated file
// explains itself this way. It is ignored.
const CommentKey = "//"

// array decodes v as an array, calling each for every element.
func (d *decoder) array(path string, v any, each func(string, any)) {
	a, ok := v.([]any)
	if !ok {
		d.add(path, "must be an array, not %s", kind(v))
		return
	}
	for i, e := range a {
		each(fmt.Sprintf("%s[%d]", path, i), e)
	}
}

func (d *decoder) str(dst *string) field {
	return func(p string, v any) {
		s, ok := v.(string)
		if !ok {
			d.add(p, "must be a string, not %s", kind(v))
			return
		}
		*dst = s
	}
}

func (d *decoder) boolean(dst *bool) field {
	return func(p string, v any) {
		b, ok := v.(bool)
		if !ok {
			d.add(p, "must be true or false, not %s", kind(v))
			return
		}
		*dst = b
	}
}

func (d *decoder) integer(dst *int) field {
	return func(p string, v any) {
		n, ok := v.(json.Number)
		if !ok {
			d.add(p, "must be a number, not %s", kind(v))
			return
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			d.add(p, "%s: must be a whole number", n)
			return
		}
		*dst = int(i)
	}
}

func (d *decoder) duration(dst *time.Duration) field {
	return func(p string, v any) {
		s, ok := v.(string)
		if !ok {
			d.add(p, `must be a duration string such as "500ms", not %s`, kind(v))
			return
		}
		t, err := time.ParseDuration(s)
		if err != nil {
			d.add(p, `%q: must be a duration such as "500ms"`, s)
			return
		}
		*dst = t
	}
}

// kind names a JSON value's type for a problem.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
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
