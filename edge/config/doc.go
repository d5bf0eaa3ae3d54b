// Package config is the site appliance's configuration file: which site
// the edge serves, who it is to the broker, where it keeps its state, and
// the gates it drives until the cloud says otherwise.
//
// The gates (and the kiosk's label and printer) are the hardware document
// of shared/hardware, decoded and checked by its code, which the cloud's
// API uses for PATCH /v1/edges/{edge_id} too. Once the cloud has sent the
// appliance a hardware document on the site's feed, the appliance drives
// that one and the file's gates are not used (docs/decisions.md, "Hardware
// from the cloud (issue 17)"): the file need hold only what must exist
// before the first connection (site, edge ID, broker, data directory,
// listen), and its gates may be left out.
//
// It may import the standard library, shared/hardware, shared/strictjson,
// sync/protocol (for Site) and shared/ids.
//
// # The file
//
// The file is JSON, decoded strictly: an unknown field, a value of the
// wrong type, trailing data or a failed check is an error. [Load] reports
// every problem it finds at once, each with its JSON path
// ("gates[1].readers[0].listen"), in an [*Error], so an installer fixes a
// file in one pass. Any object may hold a "//" key whose value is a
// string: a comment for whoever edits the file (a first configuration,
// [Initial.Document], has one beside each reader, saying how to open it
// to the LAN, and one in the kiosk).
// This is testdata/example.json, the template (its
// password_file and ca_file are taken from the file's directory, as
// /etc/svc-edge/broker-password for /etc/svc-edge/config.json):
//
//	{
//	  "site": {
//	    "mode": "live",
//	    "org_id": "org_01m7ym407qfqmvbd6h4v1aa11v",
//	    "site_id": "site_01m7ym407qfqn967a2vb4tyzgj"
//	  },
//	  "edge_id": "edge_01m7ym407qfqnvr6tca7k4z2y5",
//	  "broker": {
//	    "url": "ssl://broker.example.com:8883",
//	    "username": "edge_01m7ym407qfqnvr6tca7k4z2y5",
//	    "password_file": "broker-password",
//	    "ca_file": "broker-ca.pem"
//	  },
//	  "data_dir": "/var/lib/svc-edge",
//	  "cache_path": "/var/lib/svc-edge/cache.db",
//	  "listen": "0.0.0.0:8081",
//	  "kiosk": {"listen": "0.0.0.0:8080", "languages": ["en", "fr"], "label": "62x100"},
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
//	    },
//	    {
//	      "gate_id": "gate_01m7ym407qfqptfsbz8t3m6nw2",
//	      "readers": [
//	        {"kind": "tcp", "listen": "0.0.0.0:9002"}
//	      ],
//	      "relay": {"pin": "GPIO22", "active_low": true, "pulse": "1s"},
//	      "when_stale": "fail_open"
//	    }
//	  ]
//	}
//
// Fields:
//
//   - site: the mode ("live" or "test"), org_... and site_... IDs the edge
//     serves; they name its MQTT topics.
//   - edge_id: the edge's own edge_... ID.
//   - broker.url: tcp://, ssl://, ws:// or wss://, with a host; tcp and ssl
//     need a port. Credentials go in username and password, never in the
//     URL. Plain tcp:// and ws:// carry the password in clear, so they may
//     name only a broker on the appliance itself (localhost, 127.0.0.1,
//     ::1); a broker elsewhere is reached over TLS (ssl://, wss://).
//   - broker.ca (PEM text) or broker.ca_file (a PEM file of at most 64 KiB),
//     one of the two, for ssl:// and wss:// only: the CA the broker's
//     certificate must chain to (svc-cloud edges create puts the embedded
//     broker's CA in broker.ca). Without either the system's roots verify
//     it. The broker's host name or address must be in its certificate.
//   - broker.username, and either broker.password or broker.password_file
//     (a regular file of at most 4 KiB whose content, less trailing line
//     breaks, is the password). One of the two, not both.
//   - data_dir: the appliance's directory; default /var/lib/svc-edge.
//   - cache_path: the bbolt file; default data_dir/cache.db.
//   - listen: host:port of the local HTTP server (/healthz, /metrics and
//     camera frames); default 127.0.0.1:8081, which cameras on the LAN
//     cannot reach: a site with cameras sets an address they can.
//   - kiosk: optional; the reception kiosk. listen is its host:port on the
//     LAN (every page but pairing needs a paired browser); languages are
//     English and at most one more (en, fr), the site's default first,
//     default ["en"]; label is the badge label, 62x100 (die-cut, the
//     default) or 62 (continuous); printer, optional, is the label printer
//     (host:port) of paired devices that have none of their own. Paired
//     devices and the reception PIN are kept in data_dir/kiosk.json.
//   - gates: optional (none: the appliance drives no gate until the cloud
//     sends its hardware). Each has a gate_... gate_id (unique), at least
//     one reader, a relay and, optionally, a door sensor.
//   - readers: {"kind": "serial", "device": PATH, "baud": N} (baud default
//     9600, a standard rate), {"kind": "tcp", "listen": "host:port"} (text
//     lines from IP readers; the port may not be shared with another reader
//     or with listen), or {"kind": "camera"} (frames posted to listen).
//     A serial device belongs to one reader.
//   - relay: pin (a GPIO line name), active_low, pulse (a Go duration such
//     as "500ms"; default and bounds are gate/relay's).
//   - door: pin, active_low, pull ("up", "down", "float" or empty), poll
//     (a Go duration). Every GPIO pin, relay or door, is used once.
//   - when_stale: what the gate does when the cache is older than the
//     site's offline limit: "fail_secure" (refuse every scan; the default)
//     or "fail_open" (decide from the stale cache).
//
// Relative paths in the file (data_dir, cache_path, password_file, ca_file) are
// taken from the file's directory, so the appliance's working directory
// does not matter.
//
// # Environment
//
// These variables override the file's top-level values; an empty variable
// counts as unset, and a relative path in one is taken from the working
// directory:
//
//	SVC_EDGE_ID                    edge_id
//	SVC_EDGE_BROKER_URL            broker.url
//	SVC_EDGE_BROKER_USERNAME       broker.username
//	SVC_EDGE_BROKER_PASSWORD       broker.password (and drops password_file)
//	SVC_EDGE_BROKER_PASSWORD_FILE  broker.password_file (and drops password)
//	SVC_EDGE_BROKER_CA_FILE        broker.ca_file
//	SVC_EDGE_DATA_DIR              data_dir
//	SVC_EDGE_CACHE_PATH            cache_path
//	SVC_EDGE_LISTEN                listen
//
// A problem in a value that came from a variable names the variable too.
//
// # Secrets
//
// A Config's password is read into memory. Its MarshalJSON writes "***"
// in its place, so printing or logging a Config does not leak it.
package config
