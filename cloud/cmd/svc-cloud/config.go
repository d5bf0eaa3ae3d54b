package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/svc-vms/svc/cloud"
)

// usageError is a mistake on the command line; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Config is svc-cloud's configuration: flags first, then SVC_* variables,
// then the defaults.
type Config struct {
	Addr        string
	DataDir     string
	DatabaseURL string
	// KEK is the key-encryption key ring (SVC_KEK, base64 keys separated
	// by commas, the current one first) and KEKFile a file holding one;
	// with neither, DataDir/kek, made on first use.
	KEK, KEKFile string
	DocsURL      string
	LogLevel     string
	RateLimits   string // "free=120,pro=3000"
	Demo         bool
	// WebhooksAllowLoopback lets test-mode webhook endpoints be on this
	// machine (localhost), for development.
	WebhooksAllowLoopback bool

	// MQTTURL is an external broker; empty runs the embedded one on
	// MQTTListen, and "off" runs no sync with edges at all.
	MQTTURL      string
	MQTTListen   string
	MQTTUsername string
	MQTTPassword string
}

// env returns the SVC_ variable name or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// storeFlags registers the flags that choose the store.
func (c *Config) storeFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data", env("SVC_DATA", "./data"), "directory of the SQLite database (env SVC_DATA)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("SVC_DATABASE_URL", ""), "PostgreSQL URL; SQLite under --data when empty (env SVC_DATABASE_URL)")
	fs.StringVar(&c.KEKFile, "kek-file", env("SVC_KEK_FILE", ""), "file of the key-encryption key that seals the secrets in the database; DIR/kek under --data (made on first start) when neither it nor SVC_KEK is set (env SVC_KEK_FILE)")
	c.KEK = env("SVC_KEK", "")
	fs.StringVar(&c.LogLevel, "log-level", env("SVC_LOG_LEVEL", "info"), "debug, info, warn or error (env SVC_LOG_LEVEL)")
}

// serveFlags registers the flags of serve.
func (c *Config) serveFlags(fs *flag.FlagSet) {
	c.storeFlags(fs)
	fs.StringVar(&c.Addr, "addr", env("SVC_ADDR", "127.0.0.1:8080"), "address to listen on (env SVC_ADDR)")
	fs.StringVar(&c.DocsURL, "docs-url", env("SVC_DOCS_URL", "https://docs.svc.example"), "base of problem type URLs (env SVC_DOCS_URL)")
	fs.StringVar(&c.RateLimits, "rate-limits", env("SVC_RATE_LIMITS", ""), "per-plan requests per minute, e.g. free=120,pro=3000 (env SVC_RATE_LIMITS)")
	demo, _ := strconv.ParseBool(env("SVC_DEMO", "false"))
	fs.BoolVar(&c.Demo, "demo", demo, "seed a demo organisation on first start and print its keys (env SVC_DEMO)")
	loopback, _ := strconv.ParseBool(env("SVC_WEBHOOKS_ALLOW_LOOPBACK", "false"))
	fs.BoolVar(&c.WebhooksAllowLoopback, "webhooks-allow-loopback", loopback, "let test-mode webhook endpoints use loopback addresses such as localhost, for development; live mode never may (env SVC_WEBHOOKS_ALLOW_LOOPBACK)")
	fs.StringVar(&c.MQTTURL, "mqtt-url", env("SVC_MQTT_URL", ""), "external MQTT broker for the edges, e.g. tcp://127.0.0.1:1883; empty runs the embedded broker, off runs no edge sync (env SVC_MQTT_URL)")
	fs.StringVar(&c.MQTTListen, "mqtt-listen", env("SVC_MQTT_LISTEN", DefaultMQTTListen), "address of the embedded broker (env SVC_MQTT_LISTEN)")
	fs.StringVar(&c.MQTTUsername, "mqtt-username", env("SVC_MQTT_USERNAME", ""), "username at the external broker (env SVC_MQTT_USERNAME)")
	fs.StringVar(&c.MQTTPassword, "mqtt-password", env("SVC_MQTT_PASSWORD", ""), "password at the external broker (env SVC_MQTT_PASSWORD)")
}

// DefaultMQTTListen is where the embedded broker listens: 1884, so that it
// does not collide with an external broker (Mosquitto) on 1883 on the same
// machine.
const DefaultMQTTListen = "127.0.0.1:1884"

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.DatabaseURL == "" && c.DataDir == "" {
		return usageError{"--data may not be empty when --database-url is not given"}
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return usageError{"--database-url must be a postgres:// URL"}
	}
	if c.KEK != "" && c.KEKFile != "" {
		return usageError{"set SVC_KEK or --kek-file (SVC_KEK_FILE), not both"}
	}
	if _, err := c.level(); err != nil {
		return err
	}
	if _, err := c.limits(); err != nil {
		return err
	}
	if c.MQTTURL != "" && c.MQTTURL != "off" {
		u, err := url.Parse(c.MQTTURL)
		if err != nil || u.Host == "" || (u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "ws" && u.Scheme != "wss") {
			return usageError{fmt.Sprintf("--mqtt-url %q: want tcp://, ssl://, ws:// or wss:// with a host, or off", c.MQTTURL)}
		}
		if u.User != nil {
			return usageError{"--mqtt-url: put credentials in --mqtt-username and --mqtt-password, not in the URL"}
		}
	}
	if c.MQTTURL == "" && c.MQTTListen != "" {
		if _, _, err := net.SplitHostPort(c.MQTTListen); err != nil {
			return usageError{fmt.Sprintf("--mqtt-listen %q: want host:port", c.MQTTListen)}
		}
	}
	return nil
}

func (c *Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", c.LogLevel)}
	}
	return l, nil
}

func (c *Config) limits() (map[cloud.Plan]int, error) {
	out := map[cloud.Plan]int{}
	if c.RateLimits == "" {
		return out, nil
	}
	for _, part := range strings.Split(c.RateLimits, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n < 1 || !cloud.Plan(name).Valid() {
			return nil, usageError{fmt.Sprintf("--rate-limits: %q is not plan=requests-per-minute with a plan of free, growth, pro or enterprise", part)}
		}
		out[cloud.Plan(name)] = n
	}
	return out, nil
}

func (c *Config) sqlitePath() string { return filepath.Join(c.DataDir, "cloud.db") }

// kekPath is where the embedded default keeps its key-encryption key.
func (c *Config) kekPath() string { return filepath.Join(c.DataDir, "kek") }

func (c *Config) logger(w *os.File) *slog.Logger {
	l, _ := c.level()
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
