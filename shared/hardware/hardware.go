// Package hardware is the document that says what an appliance's gates are
// made of: per gate its readers (serial, TCP, camera), its relay, its door
// sensor and what it does when its cache is stale, and the kiosk's badge
// label and printer. It is one format wherever it appears (docs/decisions.md,
// "Hardware from the cloud (issue 17)"): the gates of the appliance's
// configuration file (edge/config), the hardware object of PATCH
// /v1/edges/{edge_id} (cloud/httpapi), what the cloud stores, and what the
// site's change feed carries to the appliance (sync/protocol). Decoding and
// checking are this package's alone, so the API refuses exactly what the
// appliance would refuse, with the same words at the same paths.
//
// It may import the standard library, shared/ids and shared/strictjson.
//
// # The document
//
//	{
//	  "gates": [
//	    {
//	      "gate_id": "gate_01m7ym407qfqpbgybweqvx4fga",
//	      "readers": [
//	        {"kind": "serial", "device": "/dev/ttyACM0", "baud": 9600},
//	        {"kind": "tcp", "listen": "0.0.0.0:9001"},
//	        {"kind": "camera"}
//	      ],
//	      "relay": {"pin": "GPIO17", "active_low": true, "pulse": "500ms"},
//	      "door": {"pin": "GPIO27", "active_low": false, "pull": "up", "poll": "100ms"},
//	      "when_stale": "fail_secure"
//	    }
//	  ],
//	  "kiosk": {"label": "62x100", "printer": "192.168.1.50:9100"}
//	}
//
// Durations are Go duration strings. Left out, pulse is DefaultPulse, poll
// DefaultPoll, baud DefaultBaud, when_stale fail_secure and label
// DefaultLabel; Defaults fills them in, so a stored or sent document says
// every value.
package hardware

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/strictjson"
)

// Defaults and bounds.
const (
	// DefaultPulse is a relay's pulse when none is given: long enough for
	// common turnstile controllers to latch one passage.
	DefaultPulse = 500 * time.Millisecond
	// MaxPulse bounds every pulse. A relay held longer is a gate left
	// open, not an admit, so a longer one is refused rather than obeyed.
	MaxPulse = time.Minute
	// DefaultPoll is how often a door sensor without edge detection is
	// read when none is given.
	DefaultPoll = 100 * time.Millisecond
	// DefaultBaud is a serial reader's rate when none is given.
	DefaultBaud = 9600
	// DefaultLabel is the kiosk's badge label when none is given.
	DefaultLabel = "62x100"
	// MaxGates bounds the gates of one document, MaxReaders a gate's
	// readers: far more than an appliance drives, small enough for one
	// message of the feed.
	MaxGates   = 100
	MaxReaders = 8
	// maxText bounds every string: pin names, device paths, addresses.
	maxText = 200
)

// Bauds are the rates a serial reader may use.
var Bauds = []int{1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400}

// Labels are the kiosk's badge labels: 62x100 (die-cut) and 62
// (continuous), as kiosk/badge names them.
var Labels = []string{"62x100", "62"}

// Reader kinds.
const (
	Serial = "serial" // text lines from a (USB-)serial QR reader
	TCP    = "tcp"    // text lines on a TCP port
	Camera = "camera" // JPEG or PNG frames posted to the local HTTP server
)

// WhenStale is what a gate does when the cache is older than the site's
// offline limit.
type WhenStale string

const (
	// FailSecure refuses every scan until the cache is fresh again.
	FailSecure WhenStale = "fail_secure"
	// FailOpen goes on deciding from the stale cache.
	FailOpen WhenStale = "fail_open"
)

// Document is an appliance's hardware. Gates may be empty: an appliance
// that drives no gate (a reception kiosk alone). Kiosk is nil when the
// document says nothing of the kiosk.
type Document struct {
	Gates []Gate `json:"gates"`
	Kiosk *Kiosk `json:"kiosk,omitempty"`
}

// Gate is one gate's hardware.
type Gate struct {
	ID      string   `json:"gate_id"`
	Readers []Reader `json:"readers"`
	Relay   Relay    `json:"relay"`
	// Door is nil when the gate has no door sensor.
	Door      *Door     `json:"door,omitempty"`
	WhenStale WhenStale `json:"when_stale"`
}

// Reader is one input of scans at a gate. Device and Baud are set for
// Serial readers only, Listen for TCP readers only.
type Reader struct {
	Kind   string `json:"kind"`
	Device string `json:"device,omitempty"`
	Baud   int    `json:"baud,omitempty"`
	Listen string `json:"listen,omitempty"`
}

// Relay describes a turnstile relay (gate/relay's Config).
type Relay struct {
	// Pin names the GPIO line ("GPIO17").
	Pin string
	// ActiveLow is set for relay boards that switch when the line is low
	// (most opto-isolated modules); the idle level is then high.
	ActiveLow bool
	// Pulse is how long a pulse holds the relay; zero means DefaultPulse.
	Pulse time.Duration
}

// Door describes a gate's door sensor, a contact on an input pin
// (gate/relay's DoorConfig).
type Door struct {
	// Pin names the GPIO line.
	Pin string
	// ActiveLow is set when the pin reads low while the door is open; by
	// default an open door reads high (a contact to ground that opens with
	// the door, with a pull-up).
	ActiveLow bool
	// Pull is the pin's internal resistor: "up", "down", "float", or empty
	// to leave it as the board set it.
	Pull string
	// Poll is how often a pin without edge detection is read, and how long
	// a wait for an edge lasts before its context is looked at again;
	// zero means DefaultPoll.
	Poll time.Duration
}

// Kiosk is the reception kiosk's printing.
type Kiosk struct {
	// Label is the badge label, one of Labels.
	Label string `json:"label"`
	// Printer is the label printer (host:port of a Brother QL on the LAN)
	// of paired devices that have none of their own; "" for none.
	Printer string `json:"printer,omitempty"`
}

// Pulls are the door sensor's resistor settings.
var Pulls = []string{"", "up", "down", "float"}

// Validate names the first bad field of a relay: what gate/relay checks
// before it drives a pin.
func (r Relay) Validate() error {
	d := &strictjson.Decoder{}
	checkRelay(d, named("relay", r.Pin), r, nil)
	return d.Err()
}

// Validate names the first bad field of a door sensor.
func (c Door) Validate() error {
	d := &strictjson.Decoder{}
	checkDoor(d, named("door sensor", c.Pin), c, nil)
	return d.Err()
}

// named is what a lone relay's or door sensor's problems are found at:
// the part and its pin.
func named(part, pin string) string {
	if pin == "" {
		return part
	}
	return part + " " + pin
}

// MarshalJSON writes the document with gates [] when it has none, as
// Parse requires them.
func (doc Document) MarshalJSON() ([]byte, error) {
	type plain Document
	if doc.Gates == nil {
		doc.Gates = []Gate{}
	}
	return json.Marshal(plain(doc))
}

// MarshalJSON writes the relay as the document spells it: the pulse as a
// duration string, left out when zero.
func (r Relay) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Pin       string `json:"pin"`
		ActiveLow bool   `json:"active_low"`
		Pulse     string `json:"pulse,omitempty"`
	}{r.Pin, r.ActiveLow, duration(r.Pulse)})
}

// MarshalJSON writes the door sensor as the document spells it.
func (c Door) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Pin       string `json:"pin"`
		ActiveLow bool   `json:"active_low"`
		Pull      string `json:"pull,omitempty"`
		Poll      string `json:"poll,omitempty"`
	}{c.Pin, c.ActiveLow, c.Pull, duration(c.Poll)})
}

// UnmarshalJSON reads a document strictly, as Parse does: an unknown
// field, a value of the wrong type or a failed check is an error naming
// the first problem.
func (doc *Document) UnmarshalJSON(b []byte) error {
	out, problems := Parse(b, nil)
	if len(problems) > 0 {
		return fmt.Errorf("hardware: %s", problems[0])
	}
	*doc = out
	return nil
}

func duration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// Parse decodes a document, fills in its defaults and checks it (Check,
// with reserved), reporting every problem in one pass, at most one per
// path. Its problems' paths are the document's own ("gates[0]..."), with
// "" for the document as a whole; gates is required.
func Parse(data []byte, reserved []Addr) (Document, []strictjson.Problem) {
	d := &strictjson.Decoder{}
	v, ok := d.Parse(data)
	if !ok {
		return Document{}, d.Problems
	}
	m, ok := v.(map[string]any)
	doc := Decode(d, "", v)
	if !ok {
		return Document{}, d.Problems
	}
	if _, ok := m["gates"]; !ok {
		d.Add("gates", "is required: the appliance's gates, or [] for none")
	}
	doc.Defaults()
	doc.Check(d, "", reserved)
	if len(d.Problems) > 0 {
		return Document{}, firstPerPath(d.Problems)
	}
	return doc, nil
}

// firstPerPath keeps the first problem at each path: a value of the wrong
// type is not also reported missing.
func firstPerPath(ps []strictjson.Problem) []strictjson.Problem {
	seen := map[string]bool{}
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p.Path] {
			seen[p.Path] = true
			out = append(out, p)
		}
	}
	return out
}

// Decode decodes the document at path from a value d parsed; "gates" and
// "kiosk" may be left out.
func Decode(d *strictjson.Decoder, path string, v any) Document {
	var doc Document
	d.Object(path, v, map[string]strictjson.Field{
		"gates": func(p string, v any) { doc.Gates = DecodeGates(d, p, v) },
		"kiosk": func(p string, v any) {
			if v == nil {
				return
			}
			doc.Kiosk = &Kiosk{}
			d.Object(p, v, KioskFields(d, doc.Kiosk))
		},
	})
	return doc
}

// DecodeGates decodes an array of gates at path.
func DecodeGates(d *strictjson.Decoder, path string, v any) []Gate {
	gates := []Gate{}
	d.Array(path, v, func(p string, v any) {
		gates = append(gates, decodeGate(d, p, v))
	})
	return gates
}

// KioskFields are the fields of a kiosk object that decode into k, for a
// caller whose kiosk object holds more (the configuration file's listen
// and languages).
func KioskFields(d *strictjson.Decoder, k *Kiosk) map[string]strictjson.Field {
	return map[string]strictjson.Field{
		"label":   d.Str(&k.Label),
		"printer": d.Str(&k.Printer),
	}
}

func decodeGate(d *strictjson.Decoder, path string, v any) Gate {
	var g Gate
	d.Object(path, v, map[string]strictjson.Field{
		"gate_id": d.Str(&g.ID),
		"readers": func(p string, v any) {
			g.Readers = []Reader{}
			d.Array(p, v, func(p string, v any) {
				var r Reader
				d.Object(p, v, map[string]strictjson.Field{
					"kind":   d.Str(&r.Kind),
					"device": d.Str(&r.Device),
					"baud":   d.Int(&r.Baud),
					"listen": d.Str(&r.Listen),
				})
				g.Readers = append(g.Readers, r)
			})
		},
		"relay": func(p string, v any) {
			d.Object(p, v, map[string]strictjson.Field{
				"pin":        d.Str(&g.Relay.Pin),
				"active_low": d.Bool(&g.Relay.ActiveLow),
				"pulse":      d.Duration(&g.Relay.Pulse),
			})
		},
		"door": func(p string, v any) {
			if v == nil {
				return
			}
			g.Door = &Door{}
			d.Object(p, v, map[string]strictjson.Field{
				"pin":        d.Str(&g.Door.Pin),
				"active_low": d.Bool(&g.Door.ActiveLow),
				"pull":       d.Str(&g.Door.Pull),
				"poll":       d.Duration(&g.Door.Poll),
			})
		},
		"when_stale": func(p string, v any) {
			var s string
			d.Str(&s)(p, v)
			g.WhenStale = WhenStale(s)
		},
	})
	return g
}

// Defaults fills in what the document left out: each gate's when_stale,
// pulse, poll and serial baud, and the kiosk's label.
func (doc *Document) Defaults() {
	DefaultGates(doc.Gates)
	if doc.Kiosk != nil && doc.Kiosk.Label == "" {
		doc.Kiosk.Label = DefaultLabel
	}
}

// DefaultGates fills in what gates left out, as Defaults does.
func DefaultGates(gates []Gate) {
	for i := range gates {
		g := &gates[i]
		if g.WhenStale == "" {
			g.WhenStale = FailSecure
		}
		if g.Relay.Pulse == 0 {
			g.Relay.Pulse = DefaultPulse
		}
		if g.Door != nil && g.Door.Poll == 0 {
			g.Door.Poll = DefaultPoll
		}
		for j := range g.Readers {
			if r := &g.Readers[j]; r.Kind == Serial && r.Baud == 0 {
				r.Baud = DefaultBaud
			}
		}
	}
}

// Clone returns a copy of doc that shares nothing with it.
func (doc Document) Clone() Document {
	out := Document{Gates: make([]Gate, len(doc.Gates))}
	for i, g := range doc.Gates {
		g.Readers = slices.Clone(g.Readers)
		if g.Door != nil {
			door := *g.Door
			g.Door = &door
		}
		out.Gates[i] = g
	}
	if doc.Kiosk != nil {
		k := *doc.Kiosk
		out.Kiosk = &k
	}
	return out
}

// Equal reports whether a and b say the same.
func Equal(a, b Document) bool {
	x, _ := json.Marshal(a) // strings, numbers and booleans always marshal
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Check adds a problem to d for every bad value of the document at path,
// whose defaults are filled in. reserved are addresses the appliance
// listens on besides its readers (its local API, its kiosk): a TCP reader
// may not clash with one.
func (doc Document) Check(d *strictjson.Decoder, path string, reserved []Addr) {
	CheckGates(d, strictjson.Join(path, "gates"), doc.Gates, reserved)
	if doc.Kiosk != nil {
		CheckKiosk(d, strictjson.Join(path, "kiosk"), *doc.Kiosk)
	}
}

// CheckKiosk adds a problem for every bad value of the kiosk at path.
func CheckKiosk(d *strictjson.Decoder, path string, k Kiosk) {
	if !slices.Contains(Labels, k.Label) {
		d.Add(path+".label", "must be 62x100 (die-cut) or 62 (continuous)")
	}
	if k.Printer != "" {
		host, port, err := net.SplitHostPort(k.Printer)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 || len(k.Printer) > maxText {
			d.Add(path+".printer", "%q is not the printer's host:port, such as 192.168.1.50:9100", k.Printer)
		}
	}
}

// CheckGates adds a problem for every bad value of the gates at path
// (their defaults filled in): gate IDs, pins, serial devices and TCP
// addresses are each used once, and no TCP reader clashes with reserved.
func CheckGates(d *strictjson.Decoder, path string, gates []Gate, reserved []Addr) {
	if len(gates) > MaxGates {
		d.Add(path, "lists %d gates; at most %d", len(gates), MaxGates)
		return
	}
	addrs := slices.Clone(reserved)
	gateIDs := map[string]string{} // ID → path of the first gate with it
	pins := map[string]string{}    // pin name → path of its first use
	devices := map[string]string{} // serial device → path of its first reader
	pin := func(path, name string) {
		if first, ok := pins[name]; ok {
			d.Add(path, "pin %s is already used at %s", name, first)
			return
		}
		pins[name] = path
	}
	for i, g := range gates {
		gp := fmt.Sprintf("%s[%d]", path, i)
		if checkID(d, gp+".gate_id", ids.Gate, g.ID) {
			if first, ok := gateIDs[g.ID]; ok {
				d.Add(gp+".gate_id", "%s is already the ID of %s", g.ID, first)
			} else {
				gateIDs[g.ID] = gp
			}
		}
		switch {
		case len(g.Readers) == 0:
			d.Add(gp+".readers", "must list at least one reader")
		case len(g.Readers) > MaxReaders:
			d.Add(gp+".readers", "lists %d readers; at most %d", len(g.Readers), MaxReaders)
		}
		for j, r := range g.Readers {
			rp := fmt.Sprintf("%s.readers[%d]", gp, j)
			if r.Kind != Serial && r.Baud != 0 {
				d.Add(rp+".baud", "only for a serial reader")
			}
			if r.Kind != Serial && r.Device != "" {
				d.Add(rp+".device", "only for a serial reader")
			}
			if r.Kind != TCP && r.Listen != "" {
				d.Add(rp+".listen", "only for a tcp reader")
			}
			switch r.Kind {
			case Serial:
				switch first, ok := devices[r.Device]; {
				case r.Device == "":
					d.Add(rp+".device", "must name the reader's device, such as /dev/ttyACM0")
				case len(r.Device) > maxText:
					d.Add(rp+".device", "is longer than %d bytes", maxText)
				case ok:
					d.Add(rp+".device", "%s is already the device of %s", r.Device, first)
				default:
					devices[r.Device] = rp
				}
				if !slices.Contains(Bauds, r.Baud) {
					d.Add(rp+".baud", "%d: want one of %v", r.Baud, Bauds)
				}
			case TCP:
				if r.Listen == "" {
					d.Add(rp+".listen", "must be host:port")
					continue
				}
				a, err := ParseAddr(rp+".listen", r.Listen)
				if err != nil {
					d.Add(rp+".listen", "%v", err)
					continue
				}
				if b, ok := a.clashesWith(addrs); ok {
					d.Add(rp+".listen", "%s clashes with %s (%s)", r.Listen, b.Path, b.Text)
					continue
				}
				addrs = append(addrs, a)
			case Camera:
			default:
				d.Add(rp+".kind", "%q: want serial, tcp or camera", r.Kind)
			}
		}
		checkRelay(d, gp+".relay", g.Relay, pin)
		if g.Door != nil {
			checkDoor(d, gp+".door", *g.Door, pin)
		}
		if g.WhenStale != FailSecure && g.WhenStale != FailOpen {
			d.Add(gp+".when_stale", "%q: want fail_secure or fail_open", g.WhenStale)
		}
	}
}

// checkRelay adds the relay's problems at path; pin, when set, claims its
// pin for the document.
func checkRelay(d *strictjson.Decoder, path string, r Relay, pin func(path, name string)) {
	switch {
	case r.Pin == "":
		d.Add(path+".pin", "must name a GPIO line")
	case len(r.Pin) > maxText:
		d.Add(path+".pin", "is longer than %d bytes", maxText)
	case pin != nil:
		pin(path+".pin", r.Pin)
	}
	if r.Pulse < 0 || r.Pulse > MaxPulse {
		d.Add(path+".pulse", "%v: must be between 0 (default %v) and %v", r.Pulse, DefaultPulse, MaxPulse)
	}
}

// checkDoor adds the door sensor's problems at path, as checkRelay does.
func checkDoor(d *strictjson.Decoder, path string, c Door, pin func(path, name string)) {
	switch {
	case c.Pin == "":
		d.Add(path+".pin", "must name a GPIO line")
	case len(c.Pin) > maxText:
		d.Add(path+".pin", "is longer than %d bytes", maxText)
	case pin != nil:
		pin(path+".pin", c.Pin)
	}
	if !slices.Contains(Pulls, c.Pull) {
		d.Add(path+".pull", "%q: want up, down, float or empty", c.Pull)
	}
	if c.Poll < 0 || (c.Poll > 0 && c.Poll < time.Millisecond) {
		d.Add(path+".poll", "%v: must be 0 (default %v) or at least 1ms", c.Poll, DefaultPoll)
	}
}

// checkID checks a TypeID and reports whether it is good.
func checkID(d *strictjson.Decoder, path, prefix, s string) bool {
	if ids.Valid(prefix, s) {
		return true
	}
	if s == "" {
		d.Add(path, "must be an ID like %s_01h455vb4pex5vsknk084sn02q", prefix)
	} else {
		d.Add(path, "%q is not an ID like %s_01h455vb4pex5vsknk084sn02q", s, prefix)
	}
	return false
}

// Addr is an address to listen on (host:port), for telling clashes.
type Addr struct {
	// Path is where the address was given ("listen", "kiosk.listen").
	Path string
	// Text is the address as given.
	Text string
	// Host is "" for every interface.
	Host string
	Port int
}

// ParseAddr parses a host:port to listen on, given at path: the port is 1
// to 65535.
func ParseAddr(path, s string) (Addr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || len(s) > maxText {
		return Addr{}, fmt.Errorf("%q is not host:port", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return Addr{}, fmt.Errorf("%q: port must be 1 to 65535", s)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = ""
	}
	return Addr{Path: path, Text: s, Host: host, Port: n}, nil
}

// Clashes reports whether a and b cannot both be listened on: the same
// port on the same host, or on every interface.
func (a Addr) Clashes(b Addr) bool {
	return a.Port == b.Port && (a.Host == b.Host || a.Host == "" || b.Host == "")
}

func (a Addr) clashesWith(others []Addr) (Addr, bool) {
	for _, b := range others {
		if a.Clashes(b) {
			return b, true
		}
	}
	return Addr{}, false
}
