package config

import (
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/strictjson"
)

// decoder walks the document as generic JSON values (shared/strictjson),
// so that every unknown field and every value of the wrong type is
// reported with its path, and collects problems instead of stopping at the
// first. The gates and the kiosk's printing are the hardware document's
// (shared/hardware), decoded and checked by its code, as the cloud's API
// decodes and checks them.
type decoder struct {
	strictjson.Decoder
	env map[string]string // path → variable it came from
}

func newDecoder() *decoder { return &decoder{Decoder: strictjson.Decoder{Comments: true}} }

func (d *decoder) add(path, format string, args ...any) { d.Add(path, format, args...) }

// err is an *Error of the problems found, each naming the variable its
// value came from; nil when there are none.
func (d *decoder) err() error {
	if len(d.Problems) == 0 {
		return nil
	}
	ps := make([]Problem, len(d.Problems))
	for i, p := range d.Problems {
		ps[i] = Problem{Path: p.Path, Env: d.env[p.Path], Msg: p.Msg}
	}
	return &Error{Problems: ps}
}

// CommentKey is a key any object of the file may hold, with a string for
// the reader of the file: JSON has no comments, and a generated file
// explains itself this way. It is ignored.
const CommentKey = strictjson.CommentKey

// document decodes data into a Config, or returns nil when it is not one
// JSON object.
func (d *decoder) document(data []byte) *Config {
	v, ok := d.Parse(data)
	if !ok {
		return nil
	}
	var c Config
	ok = d.Object("", v, map[string]strictjson.Field{
		"site": func(p string, v any) {
			d.Object(p, v, map[string]strictjson.Field{
				"mode":    d.Str(&c.Site.Mode),
				"org_id":  d.Str(&c.Site.OrgID),
				"site_id": d.Str(&c.Site.SiteID),
			})
		},
		"edge_id": d.Str(&c.EdgeID),
		"broker": func(p string, v any) {
			d.Object(p, v, map[string]strictjson.Field{
				"url":           d.Str(&c.Broker.URL),
				"username":      d.Str(&c.Broker.Username),
				"password":      d.Str(&c.Broker.Password),
				"password_file": d.Str(&c.Broker.PasswordFile),
				"ca": func(p string, v any) {
					var s string
					d.Str(&s)(p, v)
					c.Broker.CA = []byte(s)
				},
				"ca_file": d.Str(&c.Broker.CAFile),
			})
		},
		"data_dir":   d.Str(&c.DataDir),
		"cache_path": d.Str(&c.CachePath),
		"listen":     d.Str(&c.Listen),
		"gates":      func(p string, v any) { c.Gates = hardware.DecodeGates(&d.Decoder, p, v) },
		"kiosk": func(p string, v any) {
			if v == nil {
				return
			}
			c.Kiosk = &Kiosk{}
			var printing hardware.Kiosk
			fields := hardware.KioskFields(&d.Decoder, &printing)
			fields["listen"] = d.Str(&c.Kiosk.Listen)
			fields["languages"] = func(p string, v any) {
				d.Array(p, v, func(p string, v any) {
					var l string
					d.Str(&l)(p, v)
					c.Kiosk.Languages = append(c.Kiosk.Languages, l)
				})
			}
			d.Object(p, v, fields)
			c.Kiosk.Label, c.Kiosk.Printer = printing.Label, printing.Printer
		},
	})
	if !ok {
		return nil
	}
	return &c
}
