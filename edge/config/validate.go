package config

import (
	"crypto/x509"
	"net/url"
	"slices"
	"strings"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// validate adds a problem for every bad value of a resolved Config.
func (d *decoder) validate(c *Config) {
	if c.Site.Mode != "live" && c.Site.Mode != "test" {
		d.add("site.mode", "%q: must be live or test", c.Site.Mode)
	}
	d.id("site.org_id", ids.Organisation, c.Site.OrgID)
	d.id("site.site_id", ids.Site, c.Site.SiteID)
	if !c.Site.Valid() && len(d.Problems) == 0 {
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
	} else if c.Broker.Password == "" && !d.Has("broker.password_file") {
		d.add("broker.password_file", "%s is empty", c.Broker.PasswordFile)
	}

	var reserved []hardware.Addr
	if a, ok := d.addr("listen", c.Listen); ok {
		reserved = append(reserved, a)
	}
	if k := c.Kiosk; k != nil {
		if a, ok := d.addr("kiosk.listen", k.Listen); ok {
			if b, clash := clashes(a, reserved); clash {
				d.add("kiosk.listen", "%s clashes with %s (%s)", k.Listen, b.Path, b.Text)
			}
			reserved = append(reserved, a)
		}
		if len(k.Languages) == 0 {
			k.Languages = []string{"en"}
		}
		if len(k.Languages) > 2 || !slices.Contains(k.Languages, "en") {
			d.add("kiosk.languages", "must be English and at most one more language, the site's default first: [\"en\"], [\"en\", \"fr\"] or [\"fr\", \"en\"]")
		}
		if k.Label == "" {
			k.Label = hardware.DefaultLabel
		}
		hardware.CheckKiosk(&d.Decoder, "kiosk", k.Printing())
	}
	// The gates are checked by the hardware document's code, the cloud's
	// API's too; none is allowed (the cloud's document brings them).
	hardware.CheckGates(&d.Decoder, "gates", c.Gates, reserved)
}

// clashes returns the first of others that a cannot be listened on beside.
func clashes(a hardware.Addr, others []hardware.Addr) (hardware.Addr, bool) {
	for _, b := range others {
		if a.Clashes(b) {
			return b, true
		}
	}
	return hardware.Addr{}, false
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
		if b.CAFile != "" && !d.Has("broker.ca_file") {
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

// addr parses a host:port to listen on.
func (d *decoder) addr(path, s string) (hardware.Addr, bool) {
	a, err := hardware.ParseAddr(path, s)
	if err != nil {
		d.add(path, "%v", err)
		return hardware.Addr{}, false
	}
	return a, true
}
