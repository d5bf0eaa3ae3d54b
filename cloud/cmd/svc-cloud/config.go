package main

import (
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/shared/logging"
	"github.com/svc-vms/svc/sync/protocol"
)

// usageError is a mistake on the command line; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Config is svc-cloud's configuration: flags first, then SVC_* variables,
// then the defaults.
type Config struct {
	Addr string
	// MetricsListen is the admin listener's address: /metrics, /healthz
	// and /readyz; empty for none.
	MetricsListen string
	// Pprof serves Go's profiles (net/http/pprof, /debug/pprof/) on the
	// admin listener: for measuring, off by default.
	Pprof       bool
	DataDir     string
	DatabaseURL string
	// KEK is the key-encryption key ring (SVC_KEK, base64 keys separated
	// by commas, the current one first) and KEKFile a file holding one;
	// with neither, DataDir/kek, made on first use.
	KEK, KEKFile string
	DocsURL      string
	// Log is --log-format and --log-level.
	Log        logging.Config
	RateLimits string // "free=120,pro=3000"
	// PassRateLimits are the key-free pass link's requests per minute,
	// "link=20,address=120".
	PassRateLimits string
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client, and whose connections are not limited per address:
	// addresses or CIDR prefixes, comma-separated.
	TrustedProxies string
	// ReadTimeout, WriteTimeout and IdleTimeout bound a request's arrival
	// (body included), its response, and a kept-alive connection's wait.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnsPerAddress is how many connections one client address may
	// hold open; 0 is no limit.
	MaxConnsPerAddress int
	// DrainDelay is how long serve keeps serving after SIGTERM with
	// /readyz answering 503, so that load balancers stop sending it
	// requests before its listener closes; ShutdownTimeout is how long
	// requests and webhook attempts in flight then have to finish.
	DrainDelay, ShutdownTimeout time.Duration
	Demo                        bool
	// MaintainEvery is how often serve runs the maintenance sweep
	// (httpapi.Server.Purge): expired bookings, ended timesheet periods,
	// old idempotency keys, counters and enrolments.
	MaintainEvery time.Duration
	// WebhookLease is how long a claimed webhook delivery is held by its
	// claimant (cloud.SetWebhookLease).
	WebhookLease time.Duration
	// Instance names this process in every log line of serve and in its
	// MQTT client IDs; newInstance's when empty.
	Instance string
	// AllowRateLimitChange makes a difference between this process's rate
	// limits and a live replica's a warning instead of a refusal to start.
	AllowRateLimitChange bool
	// NoMigrate makes serve refuse to start on a database that lacks a
	// migration instead of applying it (svc-cloud migrate does, apart).
	NoMigrate bool
	// DBMaxConns is the most database connections the process holds: the
	// PostgreSQL pool's, or SQLite's read pool's (its writer is one
	// connection); 0 for the store's default.
	DBMaxConns int
	// badEnv are SVC_ variables that did not parse, for Validate.
	badEnv []string
	// serving says serveFlags registered the server's flags, which
	// Validate then checks.
	serving bool
	// WebhooksAllowLoopback lets test-mode webhook endpoints be on this
	// machine (localhost), for development.
	WebhooksAllowLoopback bool

	// MQTTURL is an external broker; empty runs the embedded one on
	// MQTTListen (plain, loopback only) and MQTTTLSListen (TLS), and "off"
	// runs no sync with edges at all.
	MQTTURL       string
	MQTTListen    string
	MQTTTLSListen string
	// MQTTTLSCert and MQTTTLSKey are the embedded broker's certificate and
	// key; empty, a CA and a certificate are made under DATA/tls for
	// localhost, this machine's names and addresses and MQTTTLSHosts.
	MQTTTLSCert, MQTTTLSKey string
	MQTTTLSHosts            string // comma-separated names and addresses
	// MQTTEdgeURL is the broker's URL as appliances reach it, which a
	// claim gives the edge; empty: the embedded broker's TLS listener as
	// this machine dials it, or MQTTURL. A cloud whose broker listens on
	// every interface (0.0.0.0:8884) or behind NAT needs it, or its
	// appliances are told 127.0.0.1, themselves.
	MQTTEdgeURL string
	// MQTTCA is the PEM file of the CA an external ssl:// broker's
	// certificate is verified with (the system's roots when empty).
	MQTTCA       string
	MQTTUsername string
	MQTTPassword string
	// MQTTDynsecUsername and MQTTDynsecPassword are the admin of an
	// external Mosquitto's dynamic security plugin: with them the cloud
	// keeps the edges' accounts there, and its own (MQTTUsername).
	// Empty: none (the embedded broker needs none; a Mosquitto with
	// password and ACL files is kept by hand).
	MQTTDynsecUsername, MQTTDynsecPassword string
	// MQTTShareGroup is the share group of the cloud's subscriptions
	// (protocol.DefaultShareGroup when empty); MQTTFilters, comma-separated
	// $share filters, replace them altogether.
	MQTTShareGroup, MQTTFilters string
	// MQTTDynsecEvery is how often serve reconciles those accounts with
	// the edges (edgesync.DefaultReconcileEvery by default).
	MQTTDynsecEvery time.Duration
}

// env returns the SVC_ variable name or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envDuration returns the SVC_ variable as a duration, or def when it is
// unset; one that does not parse is kept for Validate to report.
func (c *Config) envDuration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		c.badEnv = append(c.badEnv, fmt.Sprintf("%s %q: want a duration such as 30s", name, v))
		return def
	}
	return d
}

// envInt is envDuration for integers.
func (c *Config) envInt(name string, def int) int {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.badEnv = append(c.badEnv, fmt.Sprintf("%s %q: want a whole number", name, v))
		return def
	}
	return n
}

// storeFlags registers the flags that choose the store.
func (c *Config) storeFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data", env("SVC_DATA", "./data"), "directory of the SQLite database (env SVC_DATA)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("SVC_DATABASE_URL", ""), "PostgreSQL URL; SQLite under --data when empty (env SVC_DATABASE_URL)")
	fs.StringVar(&c.KEKFile, "kek-file", env("SVC_KEK_FILE", ""), "file of the key-encryption key that seals the secrets in the database; DIR/kek under --data (made on first start) when neither it nor SVC_KEK is set (env SVC_KEK_FILE)")
	c.KEK = env("SVC_KEK", "")
	c.Log.Register(fs)
}

// serveFlags registers the flags of serve.
func (c *Config) serveFlags(fs *flag.FlagSet) {
	c.storeFlags(fs)
	c.serving = true
	fs.StringVar(&c.Addr, "addr", env("SVC_ADDR", DefaultAddr), "address to listen on (env SVC_ADDR)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", env("SVC_METRICS_LISTEN", DefaultMetricsListen),
		"address of the admin listener: Prometheus /metrics, /healthz and /readyz, for the operator's network only (the API's listener answers /healthz and /readyz too); empty for none (env SVC_METRICS_LISTEN)")
	pprofOn, _ := strconv.ParseBool(env("SVC_PPROF", "false"))
	fs.BoolVar(&c.Pprof, "pprof", pprofOn, "serve Go's runtime profiles (/debug/pprof/) on the admin listener (--metrics-listen), which must be set; for measuring: a profile costs CPU while it runs and shows the code's paths (env SVC_PPROF)")
	fs.StringVar(&c.DocsURL, "docs-url", env("SVC_DOCS_URL", "https://docs.svc.example"), "base of problem type URLs (env SVC_DOCS_URL)")
	fs.StringVar(&c.RateLimits, "rate-limits", env("SVC_RATE_LIMITS", ""), "per-plan requests per minute, e.g. free=120,pro=3000 (env SVC_RATE_LIMITS)")
	fs.StringVar(&c.PassRateLimits, "pass-rate-limits", env("SVC_PASS_RATE_LIMITS", ""), fmt.Sprintf("requests per minute to the key-free pass link, per link and per client address (default link=%d,address=%d) (env SVC_PASS_RATE_LIMITS)", httpapi.DefaultPassLinkLimit, httpapi.DefaultPassAddressLimit))
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", env("SVC_TRUSTED_PROXIES", ""), "reverse proxies, as addresses or CIDR prefixes separated by commas, whose X-Forwarded-For names the client and whose connections are not limited per address; none by default (env SVC_TRUSTED_PROXIES)")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.envDuration("SVC_READ_TIMEOUT", httpapi.DefaultReadTimeout), "longest time to receive a whole request, body included (env SVC_READ_TIMEOUT)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.envDuration("SVC_WRITE_TIMEOUT", httpapi.DefaultWriteTimeout), "longest time from a request's headers to the end of its response (env SVC_WRITE_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.envDuration("SVC_IDLE_TIMEOUT", httpapi.DefaultIdleTimeout), "longest wait for the next request on a kept-alive connection (env SVC_IDLE_TIMEOUT)")
	fs.IntVar(&c.MaxConnsPerAddress, "max-conns-per-address", c.envInt("SVC_MAX_CONNS_PER_ADDRESS", httpapi.DefaultMaxConnsPerAddr), "most connections one client address (IPv4 address, IPv6 /64) may hold open; 0 for no limit (env SVC_MAX_CONNS_PER_ADDRESS)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.envDuration("SVC_DRAIN_DELAY", DefaultDrainDelay),
		"on SIGTERM or SIGINT, how long to keep serving with /readyz answering 503 before the listener closes, so load balancers see it and stop sending requests; about two of their probe intervals; 0 for none (env SVC_DRAIN_DELAY)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.envDuration("SVC_SHUTDOWN_TIMEOUT", DefaultShutdownTimeout),
		"after the drain delay, how long requests and webhook attempts in flight have to finish before they are cut (env SVC_SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&c.MaintainEvery, "maintain-every", c.envDuration("SVC_MAINTAIN_EVERY", DefaultMaintainEvery),
		"how often the maintenance sweep runs on this process: pending bookings past their confirmation window stored as expired, ended timesheet periods closed, old idempotency keys, rate-limit counters and enrolments deleted (env SVC_MAINTAIN_EVERY)")
	fs.DurationVar(&c.WebhookLease, "webhook-lease", c.envDuration("SVC_WEBHOOK_LEASE", cloud.WebhookLease),
		fmt.Sprintf("how long a claimed webhook delivery is held by the process that claimed it; one that dies leaves its deliveries to others after this; at least %s, and the same on every replica (env SVC_WEBHOOK_LEASE)", cloud.MinWebhookLease))
	fs.StringVar(&c.Instance, "instance-id", env("SVC_INSTANCE_ID", ""),
		"name of this process in every log line (instance=) and in its MQTT client IDs; HOSTNAME-RANDOM when empty, so two replicas on one host differ (env SVC_INSTANCE_ID)")
	allowChange, _ := strconv.ParseBool(env("SVC_ALLOW_RATE_LIMIT_CHANGE", "false"))
	fs.BoolVar(&c.AllowRateLimitChange, "allow-rate-limit-change", allowChange,
		"on PostgreSQL, start (warning) even when a live replica enforces other --rate-limits: for a rolling change of the limits; without it serve refuses, since replicas count against one shared counter (env SVC_ALLOW_RATE_LIMIT_CHANGE)")
	noMigrate, _ := strconv.ParseBool(env("SVC_NO_MIGRATE", "false"))
	fs.BoolVar(&c.NoMigrate, "no-migrate", noMigrate, "refuse to start when the database lacks a migration, instead of applying it: for rolling deploys, where svc-cloud migrate runs first (env SVC_NO_MIGRATE)")
	fs.IntVar(&c.DBMaxConns, "database-max-conns", c.envInt("SVC_DATABASE_MAX_CONNS", 0),
		"most database connections this process holds: PostgreSQL's pool (0: pool_max_conns in the URL, else pgx's default, the larger of 4 and the CPU count), or SQLite's readers (0: two per CPU; writes use one more connection) (env SVC_DATABASE_MAX_CONNS)")
	demo, _ := strconv.ParseBool(env("SVC_DEMO", "false"))
	fs.BoolVar(&c.Demo, "demo", demo, "seed a demo organisation on first start and print its keys (env SVC_DEMO)")
	loopback, _ := strconv.ParseBool(env("SVC_WEBHOOKS_ALLOW_LOOPBACK", "false"))
	fs.BoolVar(&c.WebhooksAllowLoopback, "webhooks-allow-loopback", loopback, "let test-mode webhook endpoints use loopback addresses such as localhost, for development; live mode never may (env SVC_WEBHOOKS_ALLOW_LOOPBACK)")
	c.brokerFlags(fs)
	fs.StringVar(&c.MQTTListen, "mqtt-listen", env("SVC_MQTT_LISTEN", DefaultMQTTListen), "plain MQTT address of the embedded broker, loopback only; empty for none (env SVC_MQTT_LISTEN)")
	fs.StringVar(&c.MQTTTLSListen, "mqtt-tls-listen", env("SVC_MQTT_TLS_LISTEN", DefaultMQTTTLSListen), "MQTT-over-TLS address of the embedded broker, e.g. 0.0.0.0:8884 for edges on the LAN; empty for none (env SVC_MQTT_TLS_LISTEN)")
	fs.StringVar(&c.MQTTTLSCert, "mqtt-tls-cert", env("SVC_MQTT_TLS_CERT", ""), "PEM certificate of the embedded broker; a CA and certificate made under DATA/tls when empty (env SVC_MQTT_TLS_CERT)")
	fs.StringVar(&c.MQTTTLSKey, "mqtt-tls-key", env("SVC_MQTT_TLS_KEY", ""), "PEM key of --mqtt-tls-cert (env SVC_MQTT_TLS_KEY)")
	fs.StringVar(&c.MQTTTLSHosts, "mqtt-tls-hosts", env("SVC_MQTT_TLS_HOSTS", ""), "more names and addresses, comma-separated, the made certificate covers (env SVC_MQTT_TLS_HOSTS)")
	fs.StringVar(&c.MQTTEdgeURL, "mqtt-edge-url", env("SVC_MQTT_EDGE_URL", ""), "the broker's URL as appliances reach it, given to each edge at its claim, e.g. ssl://cloud.example.com:8884; empty: the embedded broker's TLS listener (127.0.0.1 when it listens on every address), or --mqtt-url (env SVC_MQTT_EDGE_URL)")
	fs.StringVar(&c.MQTTShareGroup, "mqtt-share-group", env("SVC_MQTT_SHARE_GROUP", ""),
		fmt.Sprintf("share group of the cloud's subscriptions to the edges' facts, resync and status; every replica of one deployment uses the same, and on a shared or external broker give it a name of its own (default %s) (env SVC_MQTT_SHARE_GROUP)", protocol.DefaultShareGroup))
	fs.StringVar(&c.MQTTFilters, "mqtt-filters", env("SVC_MQTT_FILTERS", ""),
		"the cloud's subscriptions, comma-separated $share filters, instead of those --mqtt-share-group makes, e.g. to read one mode or organisation only (env SVC_MQTT_FILTERS)")
	fs.StringVar(&c.MQTTUsername, "mqtt-username", env("SVC_MQTT_USERNAME", ""), "username at the external broker (env SVC_MQTT_USERNAME)")
	fs.StringVar(&c.MQTTPassword, "mqtt-password", env("SVC_MQTT_PASSWORD", ""), "password at the external broker (env SVC_MQTT_PASSWORD)")
	fs.DurationVar(&c.MQTTDynsecEvery, "mqtt-dynsec-every", c.envDuration("SVC_MQTT_DYNSEC_EVERY", edgesync.DefaultReconcileEvery),
		"how often the edges' accounts at Mosquitto are reconciled with the edges: revoked ones disabled, those of no edge deleted (env SVC_MQTT_DYNSEC_EVERY)")
}

// brokerFlags registers the flags that reach an external broker and its
// dynamic security plugin: serve's, and edges create's and edges revoke's,
// which keep an edge's account there.
func (c *Config) brokerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MQTTURL, "mqtt-url", env("SVC_MQTT_URL", ""), "external MQTT broker for the edges, e.g. tcp://127.0.0.1:1883; empty runs the embedded broker, off runs no edge sync (env SVC_MQTT_URL)")
	fs.StringVar(&c.MQTTCA, "mqtt-ca", env("SVC_MQTT_CA", ""), "PEM CA of an external ssl:// broker; the system's roots when empty (env SVC_MQTT_CA)")
	fs.StringVar(&c.MQTTDynsecUsername, "mqtt-dynsec-username", env("SVC_MQTT_DYNSEC_USERNAME", ""),
		"admin of the external Mosquitto's dynamic security plugin (mosquitto_ctrl dynsec init makes one): the cloud then makes each edge's account there and disables it when the edge is revoked; empty for none (env SVC_MQTT_DYNSEC_USERNAME)")
	fs.StringVar(&c.MQTTDynsecPassword, "mqtt-dynsec-password", env("SVC_MQTT_DYNSEC_PASSWORD", ""), "password of --mqtt-dynsec-username (env SVC_MQTT_DYNSEC_PASSWORD)")
}

// DefaultMQTTListen is where the embedded broker listens: 1884, so that it
// does not collide with an external broker (Mosquitto) on 1883 on the same
// machine.
const DefaultMQTTListen = "127.0.0.1:1884"

// DefaultAddr is where serve listens for the API unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// DefaultMetricsListen is the admin listener's address: loopback, since
// the metrics tell every organisation's activity and carry no
// authentication; a Prometheus on another machine needs it opened
// (docs/decisions.md, "Metrics (issue 19)").
const DefaultMetricsListen = "127.0.0.1:8090"

// DefaultMaintainEvery is --maintain-every's default: every minute, as
// docs/decisions.md promises for the booking sweep. A sweep is a handful
// of indexed statements (under 0.1 ms on SQLite and 0.4 ms on PostgreSQL
// when there is nothing to do), so every replica may run it every minute.
const DefaultMaintainEvery = time.Minute

// DefaultDrainDelay is --drain-delay's default. A load balancer takes a
// process out of rotation once its probe of /readyz has failed a few
// times in a row: HAProxy and nginx probe every 1 to 2 s by default with
// a threshold of 2 to 3, so 2 to 6 s; Kubernetes removes a terminating
// pod from its endpoints at once, but the change takes a few seconds to
// reach kube-proxy and ingress controllers. 5 s covers those with the
// usual settings and holds a rolling deploy of a few replicas up by
// seconds only; behind a slower prober (an AWS target group probes every
// 5 to 30 s), set it to the probe interval times the failure threshold.
const DefaultDrainDelay = 5 * time.Second

// DefaultShutdownTimeout is --shutdown-timeout's default: longer than a
// request's own timeout (httpapi.DefaultRequestTimeout) and a webhook
// attempt's (webhook.DefaultTimeout), so a process stopped normally cuts
// neither; below Kubernetes' 30 s grace period less the drain delay.
const DefaultShutdownTimeout = 15 * time.Second

// DefaultMQTTTLSListen is where the embedded broker serves MQTT over TLS:
// 8884, beside an external broker's 8883. Loopback by default, like the
// API; edges on the LAN need it opened (0.0.0.0:8884).
const DefaultMQTTTLSListen = "127.0.0.1:8884"

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
	if err := c.Log.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if _, err := c.limits(); err != nil {
		return err
	}
	if len(c.badEnv) > 0 {
		return usageError{c.badEnv[0]}
	}
	if _, _, err := c.passLimits(); err != nil {
		return err
	}
	if _, err := c.trustedProxies(); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--read-timeout", c.ReadTimeout}, {"--write-timeout", c.WriteTimeout}, {"--idle-timeout", c.IdleTimeout},
		{"--shutdown-timeout", c.ShutdownTimeout}} {
		if c.serving && d.v <= 0 {
			return usageError{fmt.Sprintf("%s %s: want a positive duration such as 30s", d.name, d.v)}
		}
	}
	if c.serving && c.MaintainEvery < time.Second {
		return usageError{fmt.Sprintf("--maintain-every %s: want a duration of 1s or more, such as 1m", c.MaintainEvery)}
	}
	if c.serving && c.WebhookLease < cloud.MinWebhookLease {
		return usageError{fmt.Sprintf("--webhook-lease %s: want %s or more: a claimed batch of deliveries may take 40 s, and a shorter lease lets another process send them again", c.WebhookLease, cloud.MinWebhookLease)}
	}
	if c.Instance != "" && !validInstance(c.Instance) {
		return usageError{fmt.Sprintf("--instance-id %q: want at most 64 letters, digits, '.', '_' or '-' (it is part of MQTT client IDs)", c.Instance)}
	}
	if c.DBMaxConns < 0 {
		return usageError{fmt.Sprintf("--database-max-conns %d: want 0 (the default) or more", c.DBMaxConns)}
	}
	if c.DrainDelay < 0 {
		return usageError{fmt.Sprintf("--drain-delay %s: want 0 (none) or a positive duration such as 5s", c.DrainDelay)}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return usageError{fmt.Sprintf("--metrics-listen %q: want host:port, or empty for none", c.MetricsListen)}
		}
	}
	if c.Pprof && c.MetricsListen == "" {
		return usageError{"--pprof needs --metrics-listen: the profiles are served on the admin listener only"}
	}
	if c.MaxConnsPerAddress < 0 {
		return usageError{fmt.Sprintf("--max-conns-per-address %d: want 0 (no limit) or more", c.MaxConnsPerAddress)}
	}
	if c.MQTTURL != "" && c.MQTTURL != "off" {
		u, err := url.Parse(c.MQTTURL)
		if err != nil || u.Host == "" || (u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "ws" && u.Scheme != "wss") {
			return usageError{fmt.Sprintf("--mqtt-url %q: want tcp://, ssl://, ws:// or wss:// with a host, or off", c.MQTTURL)}
		}
		if u.User != nil {
			return usageError{"--mqtt-url: put credentials in --mqtt-username and --mqtt-password, not in the URL"}
		}
		if (u.Scheme == "tcp" || u.Scheme == "ws") && !protocol.Loopback(u.Hostname()) {
			return usageError{fmt.Sprintf("--mqtt-url %q: plain MQTT sends the password in clear, so it may reach a broker on this machine only (localhost, 127.0.0.1, ::1); use ssl:// or wss:// (and --mqtt-ca)", c.MQTTURL)}
		}
	}
	if c.MQTTEdgeURL != "" {
		u, err := url.Parse(c.MQTTEdgeURL)
		if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "ws" && u.Scheme != "wss") {
			return usageError{fmt.Sprintf("--mqtt-edge-url %q: want ssl:// or wss:// with the host and port appliances reach the broker at", c.MQTTEdgeURL)}
		}
		if (u.Scheme == "tcp" || u.Scheme == "ws") && !protocol.Loopback(u.Hostname()) {
			return usageError{fmt.Sprintf("--mqtt-edge-url %q: plain MQTT sends the edges' passwords in clear; use ssl:// or wss://", c.MQTTEdgeURL)}
		}
		if c.MQTTURL == "off" {
			return usageError{"--mqtt-edge-url with --mqtt-url off: there is no broker"}
		}
	}
	if c.MQTTShareGroup != "" && !protocol.ValidShareGroup(c.MQTTShareGroup) {
		return usageError{fmt.Sprintf("--mqtt-share-group %q: a share group may not contain '/', '+' or '#'", c.MQTTShareGroup)}
	}
	if c.MQTTShareGroup != "" && c.MQTTFilters != "" {
		return usageError{"--mqtt-share-group and --mqtt-filters: give one (the filters name their share group)"}
	}
	for _, f := range c.mqttFilters() {
		group, rest, ok := strings.Cut(strings.TrimPrefix(f, "$share/"), "/")
		if !strings.HasPrefix(f, "$share/") || !ok || !protocol.ValidShareGroup(group) || !strings.HasPrefix(rest, protocol.Root+"/") {
			return usageError{fmt.Sprintf("--mqtt-filters: %q is not a shared subscription $share/GROUP/%s/...", f, protocol.Root)}
		}
	}
	if err := c.validateDynsec(); err != nil {
		return err
	}
	if c.serving && c.MQTTURL == "" {
		if c.MQTTListen == "" && c.MQTTTLSListen == "" {
			return usageError{"--mqtt-listen and --mqtt-tls-listen are both empty: the embedded broker needs one (or --mqtt-url off)"}
		}
		if c.MQTTListen != "" {
			if _, _, err := net.SplitHostPort(c.MQTTListen); err != nil {
				return usageError{fmt.Sprintf("--mqtt-listen %q: want host:port", c.MQTTListen)}
			}
			if !protocol.LoopbackAddr(c.MQTTListen) {
				return usageError{fmt.Sprintf("--mqtt-listen %q: plain MQTT may listen on a loopback address only (127.0.0.1, ::1, localhost), "+
					"since it carries passwords in clear; edges on the LAN connect over TLS: set --mqtt-tls-listen (e.g. 0.0.0.0:8884)", c.MQTTListen)}
			}
		}
		if c.MQTTTLSListen != "" {
			if _, _, err := net.SplitHostPort(c.MQTTTLSListen); err != nil {
				return usageError{fmt.Sprintf("--mqtt-tls-listen %q: want host:port", c.MQTTTLSListen)}
			}
		}
		if (c.MQTTTLSCert == "") != (c.MQTTTLSKey == "") {
			return usageError{"--mqtt-tls-cert and --mqtt-tls-key go together"}
		}
	}
	return nil
}

// validateDynsec checks the flags of the dynamic security plugin.
func (c *Config) validateDynsec() error {
	if c.MQTTDynsecUsername == "" && c.MQTTDynsecPassword == "" {
		return nil
	}
	switch {
	case c.MQTTDynsecUsername == "" || c.MQTTDynsecPassword == "":
		return usageError{"--mqtt-dynsec-username and --mqtt-dynsec-password go together"}
	case c.MQTTURL == "" || c.MQTTURL == "off":
		return usageError{"--mqtt-dynsec-username: the edges' accounts are kept at an external Mosquitto: give its address in --mqtt-url (the embedded broker needs no accounts)"}
	case c.serving && (c.MQTTUsername == "" || c.MQTTPassword == ""):
		return usageError{"--mqtt-dynsec-username needs --mqtt-username and --mqtt-password: the cloud's own account at Mosquitto, which it makes there when missing"}
	case c.MQTTUsername == c.MQTTDynsecUsername:
		return usageError{"--mqtt-username and --mqtt-dynsec-username must differ: the plugin's admin may not publish to the edges' topics"}
	case c.serving && c.MQTTDynsecEvery <= 0:
		return usageError{fmt.Sprintf("--mqtt-dynsec-every %s: want a positive duration such as 15s", c.MQTTDynsecEvery)}
	}
	return nil
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

// passLimits reads --pass-rate-limits; 0 means the default.
func (c *Config) passLimits() (link, address int, err error) {
	if c.PassRateLimits == "" {
		return 0, 0, nil
	}
	for _, part := range strings.Split(c.PassRateLimits, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n < 1 || (name != "link" && name != "address") {
			return 0, 0, usageError{fmt.Sprintf("--pass-rate-limits: %q is not link=N or address=N with N requests per minute", part)}
		}
		if name == "link" {
			link = n
		} else {
			address = n
		}
	}
	return link, address, nil
}

// trustedProxies reads --trusted-proxies: addresses (a /32 or /128) or
// CIDR prefixes.
func (c *Config) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(c.TrustedProxies, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if a, err := netip.ParseAddr(part); err == nil && a.Zone() == "" {
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--trusted-proxies: %q is not an IP address or CIDR prefix", part)}
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// serverLimits are the HTTP server's timeouts and connection limit.
func (c *Config) serverLimits() httpapi.ServerLimits {
	proxies, _ := c.trustedProxies()
	max := c.MaxConnsPerAddress
	if max == 0 {
		max = -1 // no limit
	}
	return httpapi.ServerLimits{ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout,
		MaxConnsPerAddr: max, Exempt: proxies}
}

func (c *Config) sqlitePath() string { return filepath.Join(c.DataDir, "cloud.db") }

// tlsDir is where the embedded broker's CA and certificate are made.
func (c *Config) tlsDir() string { return filepath.Join(c.DataDir, "tls") }

// kekPath is where the embedded default keeps its key-encryption key.
func (c *Config) kekPath() string { return filepath.Join(c.DataDir, "kek") }

func (c *Config) logger(w *os.File) *slog.Logger { return c.Log.New(w) }

// newInstance names a process: its host's name and 6 random hex digits,
// so that two replicas on one host, or a process and its restart, differ.
func newInstance() string {
	host, err := os.Hostname()
	if err != nil || !validInstance(host) {
		host = "svc-cloud"
	}
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%x", host, b)
}

// validInstance says whether s may name an instance: characters that
// every broker takes in a client ID and no log pipeline must quote.
func validInstance(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// mqttFilters are the cloud's subscriptions: --mqtt-filters, else the
// protocol's in --mqtt-share-group's group, else nil (the defaults).
func (c *Config) mqttFilters() []string {
	var out []string
	for _, f := range strings.Split(c.MQTTFilters, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) == 0 && c.MQTTShareGroup != "" {
		return protocol.SharedFilters(c.MQTTShareGroup)
	}
	return out
}
