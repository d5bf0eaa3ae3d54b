package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/sync/protocol"
)

// Defaults for values the file may leave out.
const (
	DefaultDataDir   = "/var/lib/svc-edge"
	DefaultListen    = "127.0.0.1:8081"
	DefaultBaud      = hardware.DefaultBaud
	DefaultCacheName = "cache.db" // in the data directory

	// DefaultKioskListen is the kiosk's address in a first configuration:
	// the LAN, where the reception's tablets are.
	DefaultKioskListen = "0.0.0.0:8088"
)

const (
	// MaxSize bounds the file: a larger one is refused unread.
	MaxSize = 1 << 20
	// maxPasswordFile bounds a password file.
	maxPasswordFile = 4 << 10
	// maxCAFile bounds a CA file: a few certificates.
	maxCAFile = 64 << 10
)

// Config is the resolved configuration of one appliance: the file, then
// the SVC_* variables, then the defaults, validated.
type Config struct {
	Site   protocol.Site
	EdgeID string
	Broker Broker
	// DataDir is the appliance's directory.
	DataDir string
	// CachePath is the bbolt file.
	CachePath string
	// Listen is the local HTTP server's host:port.
	Listen string
	// Gates are the gates the appliance drives until the cloud sends its
	// hardware document (which then wins); none is allowed.
	Gates []Gate
	// Kiosk is the reception kiosk; nil when the appliance serves none.
	Kiosk *Kiosk
}

// Kiosk is the reception web app the appliance serves on the site's LAN.
type Kiosk struct {
	// Listen is the kiosk's host:port, on the LAN (the local API stays on
	// loopback): browsers reach it only once paired.
	Listen string
	// Languages are the kiosk's languages, the site's default first:
	// English and at most one more (en, fr). Default ["en"].
	Languages []string
	// Label is the badge label: 62x100 (die-cut) or 62 (continuous).
	Label string
	// Printer is the label printer (host:port) of paired devices that
	// have none of their own; "" for none.
	Printer string
}

// Printing is the kiosk's part of the hardware document, as the file says
// it: what the cloud's document replaces.
func (k Kiosk) Printing() hardware.Kiosk { return hardware.Kiosk{Label: k.Label, Printer: k.Printer} }

// Broker is how the edge reaches the MQTT broker.
type Broker struct {
	URL      string
	Username string
	// Password is the secret, read from PasswordFile when that is set.
	Password string
	// PasswordFile is where Password came from, or "".
	PasswordFile string
	// CA is the PEM of the CA that verifies an ssl:// or wss:// broker:
	// the file's broker.ca, or the content of broker.ca_file. Without one
	// the system's roots verify it.
	CA []byte
	// CAFile is where CA came from, or "" when the file holds it inline.
	CAFile string
}

// TLS is the TLS configuration to reach the broker: verified with CA, or
// with the system's roots when there is none; nil for plain MQTT (tcp://,
// ws://, which Parse allows only to a broker on this machine).
func (b Broker) TLS() *tls.Config {
	u, err := url.Parse(b.URL)
	if err != nil || (u.Scheme != "ssl" && u.Scheme != "wss") {
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(b.CA) > 0 {
		c.RootCAs = x509.NewCertPool()
		c.RootCAs.AppendCertsFromPEM(b.CA) // Parse checked it holds a certificate
	}
	return c
}

// Gate is one gate at the site: its readers, relay, door sensor and
// what it does when the cache is stale, as the hardware document
// (shared/hardware) says them.
type Gate = hardware.Gate

// Reader kinds.
const (
	Serial = hardware.Serial // text lines from a (USB-)serial QR reader
	TCP    = hardware.TCP    // text lines on a TCP port
	Camera = hardware.Camera // JPEG or PNG frames posted to the local HTTP server
)

// Reader is one input of scans at a gate. Device and Baud are set for
// Serial readers only, Listen for TCP readers only.
type Reader = hardware.Reader

// WhenStale is what a gate does when the cache is older than the site's
// offline limit.
type WhenStale = hardware.WhenStale

const (
	// FailSecure refuses every scan until the cache is fresh again.
	FailSecure = hardware.FailSecure
	// FailOpen goes on deciding from the stale cache.
	FailOpen = hardware.FailOpen
)

// Hardware is the file's hardware document: its gates and its kiosk's
// printing.
func (c *Config) Hardware() hardware.Document {
	doc := hardware.Document{Gates: c.Gates}
	if c.Kiosk != nil {
		k := c.Kiosk.Printing()
		doc.Kiosk = &k
	}
	return doc.Clone()
}

// Reserved are the addresses the appliance listens on besides its readers
// (listen, kiosk.listen), which no TCP reader may take: what a hardware
// document from the cloud is checked against.
func (c *Config) Reserved() []hardware.Addr {
	var out []hardware.Addr
	if a, err := hardware.ParseAddr("listen", c.Listen); err == nil {
		out = append(out, a)
	}
	if c.Kiosk != nil {
		if a, err := hardware.ParseAddr("kiosk.listen", c.Kiosk.Listen); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// Options are what Parse needs from its surroundings.
type Options struct {
	// Dir is the directory relative paths in the document are taken from;
	// "" means the working directory.
	Dir string
	// LookupEnv reads a variable, as os.LookupEnv does; nil reads none.
	LookupEnv func(string) (string, bool)
}

// Load reads the file at path and resolves it with the process's
// environment. Relative paths in it are taken from the file's directory.
// The error is an *Error listing every problem, or the error of reading
// the file.
func Load(path string) (*Config, error) {
	data, err := readFile(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	cfg, err := Parse(data, Options{Dir: filepath.Dir(path), LookupEnv: os.LookupEnv})
	var cerr *Error
	if errors.As(err, &cerr) {
		cerr.File = path
	}
	return cfg, err
}

// Parse decodes a document, applies the variables and defaults, reads the
// password file and validates the result. Its error is an *Error listing
// every problem.
func Parse(data []byte, opts Options) (*Config, error) {
	d := newDecoder()
	if len(data) > MaxSize {
		d.add("", "larger than %d bytes", MaxSize)
		return nil, d.err()
	}
	cfg := d.document(data)
	if cfg == nil {
		return nil, d.err()
	}
	d.resolve(cfg, opts)
	d.validate(cfg)
	if len(d.Problems) > 0 {
		return nil, d.err()
	}
	return cfg, nil
}

// resolve applies the variables, the defaults, the file's directory to
// relative paths, and reads the password file.
func (d *decoder) resolve(c *Config, opts Options) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || opts.Dir == "" {
			return p
		}
		return filepath.Join(opts.Dir, p)
	}
	c.DataDir, c.CachePath, c.Broker.PasswordFile = abs(c.DataDir), abs(c.CachePath), abs(c.Broker.PasswordFile)
	c.Broker.CAFile = abs(c.Broker.CAFile)

	d.env = map[string]string{}
	lookup := func(name, path string, dst *string) bool {
		if opts.LookupEnv == nil {
			return false
		}
		v, ok := opts.LookupEnv(name)
		if !ok || v == "" {
			return false
		}
		*dst = v
		d.env[path] = name
		return true
	}
	lookup("SVC_EDGE_ID", "edge_id", &c.EdgeID)
	lookup("SVC_EDGE_BROKER_URL", "broker.url", &c.Broker.URL)
	lookup("SVC_EDGE_BROKER_USERNAME", "broker.username", &c.Broker.Username)
	var pw, pwFile string
	gotPW := lookup("SVC_EDGE_BROKER_PASSWORD", "broker.password", &pw)
	gotFile := lookup("SVC_EDGE_BROKER_PASSWORD_FILE", "broker.password_file", &pwFile)
	switch {
	case gotPW && gotFile:
		d.add("broker.password", "set SVC_EDGE_BROKER_PASSWORD or SVC_EDGE_BROKER_PASSWORD_FILE, not both")
	case gotPW:
		c.Broker.Password, c.Broker.PasswordFile = pw, ""
	case gotFile:
		c.Broker.Password, c.Broker.PasswordFile = "", pwFile
	}
	lookup("SVC_EDGE_BROKER_CA_FILE", "broker.ca_file", &c.Broker.CAFile)
	lookup("SVC_EDGE_DATA_DIR", "data_dir", &c.DataDir)
	lookup("SVC_EDGE_CACHE_PATH", "cache_path", &c.CachePath)
	lookup("SVC_EDGE_LISTEN", "listen", &c.Listen)

	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.CachePath == "" {
		c.CachePath = filepath.Join(c.DataDir, DefaultCacheName)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	hardware.DefaultGates(c.Gates)

	if c.Broker.CAFile != "" {
		if len(c.Broker.CA) > 0 {
			d.add("broker.ca_file", "set ca or ca_file, not both")
		} else if data, err := readFile(c.Broker.CAFile, maxCAFile); err != nil {
			d.add("broker.ca_file", "%v", err)
		} else {
			c.Broker.CA = data
		}
	}
	if c.Broker.PasswordFile != "" {
		if c.Broker.Password != "" {
			d.add("broker.password_file", "set password or password_file, not both")
			return
		}
		data, err := readFile(c.Broker.PasswordFile, maxPasswordFile)
		if err != nil {
			d.add("broker.password_file", "%v", err)
			return
		}
		c.Broker.Password = strings.TrimRight(string(data), "\r\n")
	}
}

// readFile reads a regular file of at most limit bytes. It refuses
// anything else (a FIFO, a device) before opening it, so a path cannot
// make the appliance block or read without end.
func readFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}
