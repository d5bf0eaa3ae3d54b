package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/sync/protocol"
)

const example = "testdata/example.json"

// noEnv is an environment without variables.
func noEnv(string) (string, bool) { return "", false }

// env is an environment of the given variables.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
}

// exampleDoc returns the example as generic JSON, for a test to break.
func exampleDoc(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	return doc
}

// parseDoc parses doc with relative paths taken from testdata.
func parseDoc(t testing.TB, doc any, lookup func(string) (string, bool)) (*config.Config, error) {
	t.Helper()
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return config.Parse(data, config.Options{Dir: "testdata", LookupEnv: lookup})
}

// problems returns the problems of err, which must be an *Error, as
// "path: message" strings.
func problems(t testing.TB, err error) []string {
	t.Helper()
	var cerr *config.Error
	require.ErrorAs(t, err, &cerr)
	var out []string
	for _, p := range cerr.Problems {
		out = append(out, p.String())
	}
	return out
}

// requireProblem asserts that err has a problem at path whose text holds want.
func requireProblem(t testing.TB, err error, path, want string) {
	t.Helper()
	var cerr *config.Error
	require.ErrorAs(t, err, &cerr)
	for _, p := range cerr.Problems {
		if p.Path == path && strings.Contains(p.String(), want) {
			return
		}
	}
	t.Fatalf("no problem at %s containing %q in:\n%s", path, want, strings.Join(problems(t, err), "\n"))
}

// at walks doc to the object at keys (strings and ints).
func at(doc any, keys ...any) map[string]any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	return doc.(map[string]any)
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestParse_Example(t *testing.T) {
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	cfg, err := config.Parse(data, config.Options{Dir: "testdata", LookupEnv: noEnv})
	require.NoError(t, err)

	require.Equal(t, protocol.Site{Mode: "live", OrgID: "org_01m7ym407qfqmvbd6h4v1aa11v", SiteID: "site_01m7ym407qfqn967a2vb4tyzgj"}, cfg.Site)
	require.True(t, cfg.Site.Valid())
	require.Equal(t, "edge_01m7ym407qfqnvr6tca7k4z2y5", cfg.EdgeID)
	require.Equal(t, config.Broker{
		URL:          "ssl://broker.example.com:8883",
		Username:     "edge_01m7ym407qfqnvr6tca7k4z2y5",
		Password:     "example-broker-secret",
		PasswordFile: filepath.Join("testdata", "broker-password"),
		CA:           mustRead(t, "testdata/broker-ca.pem"),
		CAFile:       filepath.Join("testdata", "broker-ca.pem"),
	}, cfg.Broker)
	require.Equal(t, "/var/lib/svc-edge", cfg.DataDir)
	require.Equal(t, "/var/lib/svc-edge/cache.db", cfg.CachePath)
	require.Equal(t, "0.0.0.0:8081", cfg.Listen)
	require.Equal(t, &config.Kiosk{Listen: "0.0.0.0:8080", Languages: []string{"en", "fr"}, Label: "62x100"}, cfg.Kiosk)
	require.Equal(t, []config.Gate{{
		ID: "gate_01m7ym407qfqpbgybweqvx4fga",
		Readers: []config.Reader{
			{Kind: config.Serial, Device: "/dev/ttyACM0", Baud: 9600},
			{Kind: config.TCP, Listen: "0.0.0.0:9001"},
			{Kind: config.Camera},
		},
		Relay:     relay.Config{Pin: "GPIO17", ActiveLow: true, Pulse: 500 * time.Millisecond},
		Door:      &relay.DoorConfig{Pin: "GPIO27", Pull: "up", Poll: 100 * time.Millisecond},
		WhenStale: config.FailSecure,
	}, {
		ID:        "gate_01m7ym407qfqptfsbz8t3m6nw2",
		Readers:   []config.Reader{{Kind: config.TCP, Listen: "0.0.0.0:9002"}},
		Relay:     relay.Config{Pin: "GPIO22", ActiveLow: true, Pulse: time.Second},
		WhenStale: config.FailOpen,
	}}, cfg.Gates)
	for _, g := range cfg.Gates {
		require.NoError(t, g.Relay.Validate())
		if g.Door != nil {
			require.NoError(t, g.Door.Validate())
		}
	}
}

// The package comment shows the example as the template; they must agree.
func TestExample_InPackageDoc(t *testing.T) {
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var want strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		want.WriteString("//\t" + line + "\n")
	}
	require.Contains(t, string(doc), want.String(), "doc.go must quote testdata/example.json exactly")
}

func TestLoad_Example(t *testing.T) {
	for _, name := range []string{"SVC_EDGE_ID", "SVC_EDGE_BROKER_URL", "SVC_EDGE_BROKER_USERNAME", "SVC_EDGE_BROKER_PASSWORD",
		"SVC_EDGE_BROKER_PASSWORD_FILE", "SVC_EDGE_DATA_DIR", "SVC_EDGE_CACHE_PATH", "SVC_EDGE_LISTEN"} {
		t.Setenv(name, "")
	}
	t.Setenv("SVC_EDGE_LISTEN", "127.0.0.1:9999")
	cfg, err := config.Load(example)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9999", cfg.Listen, "Load reads the process environment")
	require.Equal(t, "example-broker-secret", cfg.Broker.Password, "password_file is taken from the file's directory")
}

// The gates may be left out or empty: an enrolled appliance gets them from
// the cloud's hardware document.
func TestParse_GatesOptional(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"empty":   func(d map[string]any) { d["gates"] = []any{} },
		"missing": func(d map[string]any) { delete(d, "gates") },
	} {
		t.Run(name, func(t *testing.T) {
			doc := exampleDoc(t)
			edit(doc)
			cfg, err := parseDoc(t, doc, noEnv)
			require.NoError(t, err)
			require.Empty(t, cfg.Gates)
			require.Empty(t, cfg.Hardware().Gates)
		})
	}
}

func TestLoad_Errors(t *testing.T) {
	dir := t.TempDir()
	_, err := config.Load(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"gates": []}`), 0o600))
	_, err = config.Load(bad)
	var cerr *config.Error
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, bad, cerr.File)
	require.Contains(t, err.Error(), "config "+bad+": ")

	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, make([]byte, config.MaxSize+1), 0o600))
	_, err = config.Load(big)
	require.ErrorContains(t, err, "larger than")
}

func TestParse_Defaults(t *testing.T) {
	doc := exampleDoc(t)
	delete(doc, "data_dir")
	delete(doc, "cache_path")
	delete(doc, "listen")
	g := at(doc, "gates", 0)
	delete(g, "when_stale")
	delete(at(g, "relay"), "pulse")
	delete(at(g, "door"), "poll")
	delete(at(g, "readers", 0), "baud")
	cfg, err := parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.Equal(t, config.DefaultDataDir, cfg.DataDir)
	require.Equal(t, filepath.Join(config.DefaultDataDir, "cache.db"), cfg.CachePath)
	require.Equal(t, config.DefaultListen, cfg.Listen)
	require.Equal(t, config.FailSecure, cfg.Gates[0].WhenStale, "a gate fails secure unless told otherwise")
	require.Equal(t, relay.DefaultPulse, cfg.Gates[0].Relay.Pulse)
	require.Equal(t, relay.DefaultPoll, cfg.Gates[0].Door.Poll)
	require.Equal(t, config.DefaultBaud, cfg.Gates[0].Readers[0].Baud)

	doc["data_dir"] = "state"
	cfg, err = parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.Equal(t, filepath.Join("testdata", "state"), cfg.DataDir, "a relative path is taken from the file's directory")
	require.Equal(t, filepath.Join("testdata", "state", "cache.db"), cfg.CachePath)
}

func TestParse_Problems(t *testing.T) {
	gate2 := "gate_01m7ym407qfqptfsbz8t3m6nw2"
	for _, tc := range []struct {
		name, path, want string
		breakIt          func(doc map[string]any)
	}{
		{"mode", "site.mode", "must be live or test", func(d map[string]any) { at(d, "site")["mode"] = "prod" }},
		{"org id", "site.org_id", "is not an ID like org_", func(d map[string]any) { at(d, "site")["org_id"] = "site_01m7ym407qfqn967a2vb4tyzgj" }},
		{"site id missing", "site.site_id", "must be an ID like site_", func(d map[string]any) { delete(at(d, "site"), "site_id") }},
		{"site not object", "site", "must be an object, not a string", func(d map[string]any) { d["site"] = "x" }},
		{"edge id", "edge_id", "is not an ID like edge_", func(d map[string]any) { d["edge_id"] = "edge_1" }},
		{"edge id type", "edge_id", "must be a string, not a number", func(d map[string]any) { d["edge_id"] = 7 }},
		{"broker scheme", "broker.url", `scheme "http"`, func(d map[string]any) { at(d, "broker")["url"] = "http://broker:80" }},
		{"broker mqtts", "broker.url", `scheme "mqtts"`, func(d map[string]any) { at(d, "broker")["url"] = "mqtts://broker:8883" }},
		{"broker no port", "broker.url", "must name a port", func(d map[string]any) { at(d, "broker")["url"] = "tcp://broker" }},
		{"broker no host", "broker.url", "must name a host", func(d map[string]any) { at(d, "broker")["url"] = "wss:///mqtt" }},
		{"broker userinfo", "broker.url", "must not hold credentials", func(d map[string]any) { at(d, "broker")["url"] = "tcp://u:p@broker:1883" }},
		{"broker url missing", "broker.url", "must be a tcp://", func(d map[string]any) { delete(at(d, "broker"), "url") }},
		{"plain broker on the LAN", "broker.url", "only to a broker on this appliance", func(d map[string]any) {
			at(d, "broker")["url"] = "tcp://192.0.2.10:1884"
			delete(at(d, "broker"), "ca_file")
		}},
		{"plain websocket broker elsewhere", "broker.url", "only to a broker on this appliance", func(d map[string]any) {
			at(d, "broker")["url"] = "ws://broker.example.com/mqtt"
			delete(at(d, "broker"), "ca_file")
		}},
		{"ca for a plain broker", "broker.ca_file", "only for an ssl:// or wss:// broker", func(d map[string]any) { at(d, "broker")["url"] = "tcp://127.0.0.1:1884" }},
		{"ca and ca_file", "broker.ca_file", "not both", func(d map[string]any) { at(d, "broker")["ca"] = "x" }},
		{"ca not PEM", "broker.ca", "holds no PEM certificate", func(d map[string]any) {
			delete(at(d, "broker"), "ca_file")
			at(d, "broker")["ca"] = "not a certificate"
		}},
		{"ca type", "broker.ca", "must be a string", func(d map[string]any) { at(d, "broker")["ca"] = 7 }},
		{"kiosk listen", "kiosk.listen", "host:port", func(d map[string]any) { at(d, "kiosk")["listen"] = "8080" }},
		{"kiosk clashes", "kiosk.listen", "clashes with listen", func(d map[string]any) { at(d, "kiosk")["listen"] = "0.0.0.0:8081" }},
		{"kiosk no English", "kiosk.languages", "must be English", func(d map[string]any) { at(d, "kiosk")["languages"] = []any{"fr"} }},
		{"kiosk three languages", "kiosk.languages", "at most one more", func(d map[string]any) { at(d, "kiosk")["languages"] = []any{"en", "fr", "de"} }},
		{"kiosk label", "kiosk.label", "62x100", func(d map[string]any) { at(d, "kiosk")["label"] = "A4" }},
		{"kiosk unknown", "kiosk.pin", "unknown", func(d map[string]any) { at(d, "kiosk")["pin"] = "1234" }},
		{"ca file missing", "broker.ca_file", "no such file", func(d map[string]any) { at(d, "broker")["ca_file"] = "nope.pem" }},
		{"ca file not PEM", "broker.ca_file", "holds no PEM certificate", func(d map[string]any) { at(d, "broker")["ca_file"] = "broker-password" }},
		{"username", "broker.username", "must not be empty", func(d map[string]any) { at(d, "broker")["username"] = " " }},
		{"no password", "broker.password", "must not be empty", func(d map[string]any) { delete(at(d, "broker"), "password_file") }},
		{"both passwords", "broker.password_file", "not both", func(d map[string]any) { at(d, "broker")["password"] = "x" }},
		{"password file missing", "broker.password_file", "no such file", func(d map[string]any) { at(d, "broker")["password_file"] = "nope" }},
		{"password file a directory", "broker.password_file", "not a regular file", func(d map[string]any) { at(d, "broker")["password_file"] = "." }},
		{"listen", "listen", "is not host:port", func(d map[string]any) { d["listen"] = "8081" }},
		{"listen port", "listen", "port must be 1 to 65535", func(d map[string]any) { d["listen"] = ":0" }},
		{"kiosk printer", "kiosk.printer", "is not the printer's host:port", func(d map[string]any) { at(d, "kiosk")["printer"] = "printer" }},
		{"gates not array", "gates", "must be an array, not an object", func(d map[string]any) { d["gates"] = map[string]any{} }},
		{"gate id", "gates[1].gate_id", "is not an ID like gate_", func(d map[string]any) { at(d, "gates", 1)["gate_id"] = "site_01m7ym407qfqn967a2vb4tyzgj" }},
		{"gate id twice", "gates[1].gate_id", gate2 + " is already the ID of gates[0]", func(d map[string]any) { at(d, "gates", 0)["gate_id"] = gate2 }},
		{"no readers", "gates[1].readers", "at least one reader", func(d map[string]any) { at(d, "gates", 1)["readers"] = []any{} }},
		{"reader kind", "gates[0].readers[2].kind", `"usb": want serial, tcp or camera`, func(d map[string]any) { at(d, "gates", 0, "readers", 2)["kind"] = "usb" }},
		{"serial device", "gates[0].readers[0].device", "must name the reader's device", func(d map[string]any) { delete(at(d, "gates", 0, "readers", 0), "device") }},
		{"serial device twice", "gates[1].readers[0].device", "already the device of gates[0].readers[0]", func(d map[string]any) {
			at(d, "gates", 1)["readers"] = []any{map[string]any{"kind": "serial", "device": "/dev/ttyACM0"}}
		}},
		{"baud", "gates[0].readers[0].baud", "want one of", func(d map[string]any) { at(d, "gates", 0, "readers", 0)["baud"] = 9601 }},
		{"baud fraction", "gates[0].readers[0].baud", "must be a whole number", func(d map[string]any) { at(d, "gates", 0, "readers", 0)["baud"] = 9600.5 }},
		{"baud on tcp", "gates[0].readers[1].baud", "only for a serial reader", func(d map[string]any) { at(d, "gates", 0, "readers", 1)["baud"] = 9600 }},
		{"listen on camera", "gates[0].readers[2].listen", "only for a tcp reader", func(d map[string]any) { at(d, "gates", 0, "readers", 2)["listen"] = ":9005" }},
		{"device on tcp", "gates[0].readers[1].device", "only for a serial reader", func(d map[string]any) { at(d, "gates", 0, "readers", 1)["device"] = "/dev/ttyS0" }},
		{"tcp listen missing", "gates[0].readers[1].listen", "must be host:port", func(d map[string]any) { delete(at(d, "gates", 0, "readers", 1), "listen") }},
		{"tcp listen unparseable", "gates[0].readers[1].listen", "is not host:port", func(d map[string]any) { at(d, "gates", 0, "readers", 1)["listen"] = "9001" }},
		{"tcp listen twice", "gates[1].readers[0].listen", "clashes with gates[0].readers[1]", func(d map[string]any) { at(d, "gates", 1, "readers", 0)["listen"] = "0.0.0.0:9001" }},
		{"tcp listen same port, wildcard", "gates[1].readers[0].listen", "clashes with gates[0].readers[1]", func(d map[string]any) { at(d, "gates", 1, "readers", 0)["listen"] = "127.0.0.1:9001" }},
		{"tcp listen is the http listen", "gates[1].readers[0].listen", "clashes with listen", func(d map[string]any) { at(d, "gates", 1, "readers", 0)["listen"] = ":8081" }},
		{"relay pin", "gates[0].relay.pin", "must name a GPIO line", func(d map[string]any) { delete(at(d, "gates", 0, "relay"), "pin") }},
		{"relay pin twice", "gates[1].relay.pin", "pin GPIO17 is already used at gates[0].relay.pin", func(d map[string]any) { at(d, "gates", 1, "relay")["pin"] = "GPIO17" }},
		{"door pin is a relay pin", "gates[1].relay.pin", "already used at gates[0].door.pin", func(d map[string]any) { at(d, "gates", 1, "relay")["pin"] = "GPIO27" }},
		{"relay pulse long", "gates[0].relay.pulse", "must be between 0", func(d map[string]any) { at(d, "gates", 0, "relay")["pulse"] = "2m" }},
		{"relay pulse negative", "gates[0].relay.pulse", "must be between 0", func(d map[string]any) { at(d, "gates", 0, "relay")["pulse"] = "-1s" }},
		{"relay pulse unparseable", "gates[0].relay.pulse", `"500": must be a duration`, func(d map[string]any) { at(d, "gates", 0, "relay")["pulse"] = "500" }},
		{"relay pulse number", "gates[0].relay.pulse", "must be a duration string", func(d map[string]any) { at(d, "gates", 0, "relay")["pulse"] = 500 }},
		{"active low type", "gates[0].relay.active_low", "must be true or false, not a string", func(d map[string]any) { at(d, "gates", 0, "relay")["active_low"] = "yes" }},
		{"door pin", "gates[0].door.pin", "must name a GPIO line", func(d map[string]any) { at(d, "gates", 0, "door")["pin"] = "" }},
		{"door pull", "gates[0].door.pull", `"sideways": want up, down, float or empty`, func(d map[string]any) { at(d, "gates", 0, "door")["pull"] = "sideways" }},
		{"door poll", "gates[0].door.poll", "at least 1ms", func(d map[string]any) { at(d, "gates", 0, "door")["poll"] = "10us" }},
		{"door not object", "gates[0].door", "must be an object, not an array", func(d map[string]any) { at(d, "gates", 0)["door"] = []any{} }},
		{"when stale", "gates[1].when_stale", `"fail_closed": want fail_secure or fail_open`, func(d map[string]any) { at(d, "gates", 1)["when_stale"] = "fail_closed" }},
		{"unknown top-level", "brokers", "unknown field", func(d map[string]any) { d["brokers"] = map[string]any{} }},
		{"unknown nested", "gates[1].relay.pulse_ms", "unknown field", func(d map[string]any) { at(d, "gates", 1, "relay")["pulse_ms"] = 500 }},
		{"unknown in reader", "gates[0].readers[2].url", "unknown field", func(d map[string]any) { at(d, "gates", 0, "readers", 2)["url"] = "rtsp://cam" }},
		{"unknown in site", "site.timezone", "unknown field", func(d map[string]any) { at(d, "site")["timezone"] = "Europe/Paris" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := exampleDoc(t)
			tc.breakIt(doc)
			cfg, err := parseDoc(t, doc, noEnv)
			require.Nil(t, cfg)
			requireProblem(t, err, tc.path, tc.want)
		})
	}
}

func TestParse_EveryProblemAtOnce(t *testing.T) {
	doc := exampleDoc(t)
	at(doc, "site")["mode"] = "prod"
	doc["edge_id"] = "nope"
	doc["extra"] = true
	at(doc, "gates", 1, "relay")["pin"] = "GPIO17"
	at(doc, "gates", 1)["readers"] = []any{}
	_, err := parseDoc(t, doc, noEnv)
	got := problems(t, err)
	require.Len(t, got, 5, "%s", strings.Join(got, "\n"))
	require.Contains(t, err.Error(), "5 problems:")
	for _, path := range []string{"site.mode", "edge_id", "extra", "gates[1].relay.pin", "gates[1].readers"} {
		requireProblem(t, err, path, "")
	}
}

func TestParse_NotJSON(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":          "",
		"syntax":         "{\n  \"site\": ,\n}",
		"truncated":      `{"site": {`,
		"trailing data":  `{} {}`,
		"not an object":  `[]`,
		"a bare string":  `"config"`,
		"trailing comma": `{"edge_id": "x",}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(doc), config.Options{LookupEnv: noEnv})
			require.Nil(t, cfg)
			var cerr *config.Error
			require.ErrorAs(t, err, &cerr)
			require.Len(t, cerr.Problems, 1)
			require.Equal(t, "", cerr.Problems[0].Path)
		})
	}
	_, err := config.Parse([]byte("{\n  \"site\": ,\n}"), config.Options{})
	require.ErrorContains(t, err, "line 2, column 11")
}

func TestParse_EnvOverrides(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("from-env-file\r\n"), 0o600))
	vars := map[string]string{
		"SVC_EDGE_ID":              "edge_01m7ym407qfqpbgybweqvx4fgb",
		"SVC_EDGE_BROKER_URL":      "wss://broker.example.com/mqtt",
		"SVC_EDGE_BROKER_USERNAME": "someone",
		"SVC_EDGE_DATA_DIR":        "/srv/edge",
		"SVC_EDGE_CACHE_PATH":      "/srv/edge/other.db",
		"SVC_EDGE_LISTEN":          "[::1]:8443",
	}
	cfg, err := parseDoc(t, exampleDoc(t), env(vars))
	require.NoError(t, err)
	require.Equal(t, "edge_01m7ym407qfqpbgybweqvx4fgb", cfg.EdgeID)
	require.Equal(t, "wss://broker.example.com/mqtt", cfg.Broker.URL)
	require.Equal(t, "someone", cfg.Broker.Username)
	require.Equal(t, "/srv/edge", cfg.DataDir)
	require.Equal(t, "/srv/edge/other.db", cfg.CachePath)
	require.Equal(t, "[::1]:8443", cfg.Listen)

	t.Run("password", func(t *testing.T) {
		cfg, err := parseDoc(t, exampleDoc(t), env(map[string]string{"SVC_EDGE_BROKER_PASSWORD": "from-env"}))
		require.NoError(t, err)
		require.Equal(t, "from-env", cfg.Broker.Password)
		require.Empty(t, cfg.Broker.PasswordFile, "the variable replaces the file's password_file")
	})
	t.Run("password file", func(t *testing.T) {
		doc := exampleDoc(t)
		at(doc, "broker")["password"] = "in-file"
		delete(at(doc, "broker"), "password_file")
		cfg, err := parseDoc(t, doc, env(map[string]string{"SVC_EDGE_BROKER_PASSWORD_FILE": pwFile}))
		require.NoError(t, err)
		require.Equal(t, "from-env-file", cfg.Broker.Password, "trailing CR LF dropped")
		require.Equal(t, pwFile, cfg.Broker.PasswordFile)
	})
	t.Run("both passwords", func(t *testing.T) {
		_, err := parseDoc(t, exampleDoc(t), env(map[string]string{"SVC_EDGE_BROKER_PASSWORD": "a", "SVC_EDGE_BROKER_PASSWORD_FILE": pwFile}))
		requireProblem(t, err, "broker.password", "not both")
	})
	t.Run("empty counts as unset", func(t *testing.T) {
		cfg, err := parseDoc(t, exampleDoc(t), env(map[string]string{"SVC_EDGE_LISTEN": "", "SVC_EDGE_BROKER_PASSWORD": ""}))
		require.NoError(t, err)
		require.Equal(t, "0.0.0.0:8081", cfg.Listen)
		require.Equal(t, "example-broker-secret", cfg.Broker.Password)
	})
	t.Run("a bad value names its variable", func(t *testing.T) {
		_, err := parseDoc(t, exampleDoc(t), env(map[string]string{"SVC_EDGE_BROKER_URL": "mqtt://x:1883", "SVC_EDGE_LISTEN": "0.0.0.0:9002"}))
		requireProblem(t, err, "broker.url", `scheme "mqtt": want tcp, ssl, ws or wss (from SVC_EDGE_BROKER_URL)`)
		requireProblem(t, err, "gates[1].readers[0].listen", "clashes with listen (0.0.0.0:9002)")
	})
}

func TestParse_PasswordFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for name, tc := range map[string]struct{ content, want string }{
		"plain":          {"s3cret", "s3cret"},
		"newline":        {"s3cret\n", "s3cret"},
		"inner spaces":   {" s3 cret \n", " s3 cret "},
		"several breaks": {"s3cret\r\n\n", "s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := exampleDoc(t)
			at(doc, "broker")["password_file"] = write(name, tc.content)
			cfg, err := parseDoc(t, doc, noEnv)
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Broker.Password)
		})
	}
	t.Run("empty", func(t *testing.T) {
		doc := exampleDoc(t)
		at(doc, "broker")["password_file"] = write("empty", "\n")
		_, err := parseDoc(t, doc, noEnv)
		requireProblem(t, err, "broker.password_file", "is empty")
	})
	t.Run("too large", func(t *testing.T) {
		doc := exampleDoc(t)
		at(doc, "broker")["password_file"] = write("large", strings.Repeat("x", 5000))
		_, err := parseDoc(t, doc, noEnv)
		requireProblem(t, err, "broker.password_file", "larger than 4096 bytes")
	})
}

func TestConfig_MarshalJSONRedacts(t *testing.T) {
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	cfg, err := config.Parse(data, config.Options{Dir: "testdata", LookupEnv: noEnv})
	require.NoError(t, err)
	for _, v := range []any{cfg, *cfg, map[string]any{"config": cfg}} {
		out, err := json.Marshal(v)
		require.NoError(t, err)
		require.NotContains(t, string(out), "example-broker-secret")
		require.Contains(t, string(out), `"password":"***"`)
	}

	// What it prints is a file Parse reads back to the same Config, less
	// the secret.
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	_, err = config.Parse(out, config.Options{LookupEnv: noEnv})
	requireProblem(t, err, "broker.password_file", "not both") // "***" is never taken for a password
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out, &doc))
	delete(at(doc, "broker"), "password")
	data, err = json.Marshal(doc)
	require.NoError(t, err)
	again, err := config.Parse(data, config.Options{LookupEnv: noEnv}) // paths are resolved already

	require.NoError(t, err)
	require.Equal(t, cfg, again)
}

func TestError_Format(t *testing.T) {
	one := &config.Error{File: "c.json", Problems: []config.Problem{{Path: "listen", Env: "SVC_EDGE_LISTEN", Msg: "bad"}}}
	require.Equal(t, "config c.json: listen: bad (from SVC_EDGE_LISTEN)", one.Error())
	two := &config.Error{Problems: []config.Problem{{Msg: "a"}, {Path: "b", Msg: "c"}}}
	require.Equal(t, "config: 2 problems:\n  a\n  b: c", two.Error())
	require.False(t, errors.Is(two, os.ErrNotExist))
}

// A "//" key holds a comment for the reader of the file, in any object;
// anything but a string there is a mistake.
func TestParse_Comments(t *testing.T) {
	doc := exampleDoc(t)
	doc["//"] = "made by svc-cloud edges create"
	at(doc, "gates", 0, "readers", 1)["//"] = "loopback only"
	_, err := parseDoc(t, doc, env(nil))
	require.NoError(t, err)
	at(doc, "gates", 0, "readers", 1)["//"] = 7.0
	_, err = parseDoc(t, doc, env(nil))
	requireProblem(t, err, "gates[0].readers[1].//", "a comment must be a string, not a number")
}

// TestBroker_TLS: an ssl:// broker is verified with the file's CA, given
// inline or as a file, or with the system's roots without one; a plain
// broker on this appliance gets no TLS.
func TestBroker_TLS(t *testing.T) {
	ca := mustRead(t, "testdata/broker-ca.pem")
	doc := exampleDoc(t)
	cfg, err := parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.NotNil(t, cfg.Broker.TLS().RootCAs, "ca_file")

	delete(at(doc, "broker"), "ca_file")
	at(doc, "broker")["ca"] = string(ca)
	cfg, err = parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.Equal(t, ca, cfg.Broker.CA)
	require.NotNil(t, cfg.Broker.TLS().RootCAs, "inline ca")
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.Contains(t, string(out), `"ca":"-----BEGIN CERTIFICATE-----`, "config check shows the CA")

	delete(at(doc, "broker"), "ca")
	cfg, err = parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.NotNil(t, cfg.Broker.TLS())
	require.Nil(t, cfg.Broker.TLS().RootCAs, "the system's roots")

	at(doc, "broker")["url"] = "tcp://localhost:1884"
	cfg, err = parseDoc(t, doc, noEnv)
	require.NoError(t, err)
	require.Nil(t, cfg.Broker.TLS(), "plain MQTT on this appliance")
}
