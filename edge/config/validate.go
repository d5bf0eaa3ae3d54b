package config

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// bauds are the rates a serial reader may use.
var bauds = []int{1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400}

// validate adds a problem for every bad value of a resolved Config.
func (d *decoder) validate(c *Config) {
	if c.Site.Mode != "live" && c.Site.Mode != "test" {
		d.add("site.mode", "%q: must be live or test", c.Site.Mode)
	}
	d.id("site.org_id", ids.Organisation, c.Site.OrgID)
	d.id("site.site_id", ids.Site, c.Site.SiteID)
	if !c.Site.Valid() && len(d.problems) == 0 {
		d.add("site", "not a valid site") // the checks above mirror Valid; this is its backstop
	}
	d.id("edge_id", ids.Edge, c.EdgeID)
	d.brokerURL(c.Broker.URL)
	d.brokerCA(c.Broker)
	if strings.TrimSpace(c.Broker.Username) == "" {
		d.add("broker.username", "must not be empty")
	}
	if c.Broker.Password == "" && c.Broker.PasswordFile == "" {
		d.add("broker.password", "must not be empty: set password, password_file, SVC_EDGE_BROKER_PASSWORD or SVC_EDGE_BROKER_PASSWORD_FILE")
	} else if c.Broker.Password == "" && !d.has("broker.password_file") {
		d.add("broker.password_file", "%s is empty", c.Broker.PasswordFile)
	}

	var addrs []boundAddr
	if a, ok := d.addr("listen", c.Listen); ok {
		addrs = append(addrs, a)
	}
	if k := c.Kiosk; k != nil {
		if a, ok := d.addr("kiosk.listen", k.Listen); ok {
			for _, b := range addrs {
				if a.clashes(b) {
					d.add("kiosk.listen", "%s clashes with %s (%s)", k.Listen, b.path, b.text)
				}
			}
			addrs = append(addrs, a)
		}
		if len(k.Languages) == 0 {
			k.Languages = []string{"en"}
		}
		if len(k.Languages) > 2 || !slices.Contains(k.Languages, "en") {
			d.add("kiosk.languages", "must be English and at most one more language, the site's default first: [\"en\"], [\"en\", \"fr\"] or [\"fr\", \"en\"]")
		}
		if k.Label == "" {
			k.Label = "62x100"
		}
		if k.Label != "62x100" && k.Label != "62" {
			d.add("kiosk.label", "must be 62x100 (die-cut) or 62 (continuous)")
		}
	}
	if len(c.Gates) == 0 {
		d.add("gates", "must list at least one gate")
	}
	gateIDs := map[string]string{} // ID → path of the first gate with it
	pins := map[string]string{}    // pin name → path of its first use
	devices := map[string]string{} // serial device → path of its first reader
	pin := func(path, name string) {
		if first, ok := pins[name]; ok {
			d.add(path, "pin %s is already used at %s", name, first)
			return
		}
		pins[name] = path
	}
	for i, g := range c.Gates {
		gp := fmt.Sprintf("gates[%d]", i)
		if d.id(gp+".gate_id", ids.Gate, g.ID) {
			if first, ok := gateIDs[g.ID]; ok {
				d.add(gp+".gate_id", "%s is already the ID of %s", g.ID, first)
			} else {
				gateIDs[g.ID] = gp
			}
		}
		if len(g.Readers) == 0 {
			d.add(gp+".readers", "must list at least one reader")
		}
		for j, r := range g.Readers {
			rp := fmt.Sprintf("%s.readers[%d]", gp, j)
			if r.Kind != Serial && r.Baud != 0 {
				d.add(rp+".baud", "only for a serial reader")
			}
			if r.Kind != Serial && r.Device != "" {
				d.add(rp+".device", "only for a serial reader")
			}
			if r.Kind != TCP && r.Listen != "" {
				d.add(rp+".listen", "only for a tcp reader")
			}
			switch r.Kind {
			case Serial:
				if r.Device == "" {
					d.add(rp+".device", "must name the reader's device, such as /dev/ttyACM0")
				} else if first, ok := devices[r.Device]; ok {
					d.add(rp+".device", "%s is already the device of %s", r.Device, first)
				} else {
					devices[r.Device] = rp
				}
				if !slices.Contains(bauds, r.Baud) {
					d.add(rp+".baud", "%d: want one of %v", r.Baud, bauds)
				}
			case TCP:
				if r.Listen == "" {
					d.add(rp+".listen", "must be host:port")
				} else if a, ok := d.addr(rp+".listen", r.Listen); ok {
					for _, b := range addrs {
						if a.clashes(b) {
							d.add(rp+".listen", "%s clashes with %s (%s)", r.Listen, b.path, b.text)
							ok = false
							break
						}
					}
					if ok {
						addrs = append(addrs, a)
					}
				}
			case Camera:
			default:
				d.add(rp+".kind", "%q: want serial, tcp or camera", r.Kind)
			}
		}
		if g.Relay.Pin == "" {
			d.add(gp+".relay.pin", "must name a GPIO line")
		} else {
			pin(gp+".relay.pin", g.Relay.Pin)
		}
		if g.Relay.Pulse < 0 || g.Relay.Pulse > relay.MaxPulse {
			d.add(gp+".relay.pulse", "%v: must be between 0 (default %v) and %v", g.Relay.Pulse, relay.DefaultPulse, relay.MaxPulse)
		} else if g.Relay.Pin != "" {
			if err := g.Relay.Validate(); err != nil { // rules added to relay later
				d.add(gp+".relay", "%v", err)
			}
		}
		if g.Door != nil {
			d.door(gp+".door", *g.Door, pin)
		}
		if g.WhenStale != FailSecure && g.WhenStale != FailOpen {
			d.add(gp+".when_stale", "%q: want fail_secure or fail_open", g.WhenStale)
		}
	}
}

func (d *decoder) door(path string, c relay.DoorConfig, pin func(path, name string)) {
	bad := len(d.problems)
	if c.Pin == "" {
		d.add(path+".pin", "must name a GPIO line")
	} else {
		pin(path+".pin", c.Pin)
	}
	switch c.Pull {
	case "", "up", "down", "float":
	default:
		d.add(path+".pull", "%q: want up, down, float or empty", c.Pull)
	}
	if c.Poll < 0 || (c.Poll > 0 && c.Poll.Milliseconds() < 1) {
		d.add(path+".poll", "%v: must be 0 (default %v) or at least 1ms", c.Poll, relay.DefaultPoll)
	}
	if len(d.problems) == bad {
		if err := c.Validate(); err != nil { // rules added to relay later
			d.add(path, "%v", err)
		}
	}
}

// has reports whether a problem at path was already found.
func (d *decoder) has(path string) bool {
	return slices.ContainsFunc(d.problems, func(p Problem) bool { return p.Path == path })
}

// id checks a TypeID and reports whether it is good.
func (d *decoder) id(path, prefix, s string) bool {
	if !ids.Valid(prefix, s) {
		if s == "" {
			d.add(path, "must be an ID like %s_01h455vb4pex5vsknk084sn02q", prefix)
		} else {
			d.add(path, "%q is not an ID like %s_01h455vb4pex5vsknk084sn02q", s, prefix)
		}
		return false
	}
	return true
}

func (d *decoder) brokerURL(s string) {
	const path = "broker.url"
	if s == "" {
		d.add(path, "must be a tcp://, ssl://, ws:// or wss:// URL")
		return
	}
	u, err := url.Parse(s)
	if err != nil {
		d.add(path, "not a URL: %v", err)
		return
	}
	switch u.Scheme {
	case "tcp", "ssl", "ws", "wss":
	default:
		d.add(path, "scheme %q: want tcp, ssl, ws or wss", u.Scheme)
		return
	}
	if u.User != nil {
		d.add(path, "must not hold credentials: use broker.username and broker.password")
	}
	if u.Hostname() == "" {
		d.add(path, "must name a host")
	} else if (u.Scheme == "tcp" || u.Scheme == "ssl") && u.Port() == "" {
		d.add(path, "must name a port (1883 for tcp, 8883 for ssl)")
	} else if (u.Scheme == "tcp" || u.Scheme == "ws") && !protocol.Loopback(u.Hostname()) {
		d.add(path, "plain %s:// sends the password and every message in clear: only to a broker on this appliance "+
			"(localhost, 127.0.0.1, ::1); use ssl:// (MQTT over TLS) with broker.ca or broker.ca_file", u.Scheme)
	}
}

// brokerCA checks the CA: PEM certificates, and only for a broker reached
// over TLS.
func (d *decoder) brokerCA(b Broker) {
	path := "broker.ca"
	if b.CAFile != "" {
		path = "broker.ca_file"
	}
	if len(b.CA) == 0 {
		if b.CAFile != "" && !d.has("broker.ca_file") {
			d.add(path, "%s is empty", b.CAFile)
		}
		return
	}
	if u, err := url.Parse(b.URL); err == nil && u.Scheme != "ssl" && u.Scheme != "wss" {
		d.add(path, "only for an ssl:// or wss:// broker")
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b.CA) {
		d.add(path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
}

// boundAddr is a listen address, for telling clashes.
type boundAddr struct {
	path, text string
	host       string // "" for every interface
	port       int
}

// addr parses a host:port to listen on.
func (d *decoder) addr(path, s string) (boundAddr, bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		d.add(path, "%q is not host:port", s)
		return boundAddr{}, false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		d.add(path, "%q: port must be 1 to 65535", s)
		return boundAddr{}, false
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = ""
	}
	return boundAddr{path: path, text: s, host: host, port: n}, true
}

// clashes reports whether a and b cannot both be listened on: the same
// port on the same host, or on every interface.
func (a boundAddr) clashes(b boundAddr) bool {
	return a.port == b.port && (a.host == b.host || a.host == "" || b.host == "")
}
