package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/telemetry"
	"github.com/svc-vms/svc/cloud/webhook"
	"github.com/svc-vms/svc/shared/gcpercent"
)

const usage = `usage:
  svc-cloud serve [--addr 127.0.0.1:8080] [--metrics-listen 127.0.0.1:8090] [--data DIR] [--database-url URL] [--demo] [--mqtt-url URL [--mqtt-dynsec-username U] [--mqtt-share-group G] | --mqtt-listen ADDR --mqtt-tls-listen ADDR] [--webhooks-allow-loopback]
        [--no-migrate] [--drain-delay 5s] [--shutdown-timeout 15s] [--database-max-conns N] [--maintain-every 1m] [--webhook-lease 2m] [--instance-id ID] [--pprof]
  svc-cloud migrate [--data DIR | --database-url URL]
  svc-cloud seed [--data DIR | --database-url URL] [--plan free|growth|pro|enterprise] --json
  svc-cloud keys create --org ID --mode live|test --kind secret|publishable [--scopes a,b] --json
  svc-cloud keys revoke --org ID --key-id ID
  svc-cloud edges create --org ID --mode live|test --site ID [--name N] [--broker URL] [--broker-ca FILE|system] [--mqtt-url URL --mqtt-dynsec-username U --mqtt-dynsec-password P] [--json]
  svc-cloud edges claim [CODE | --appliance URL] [--site ID] [--name N] [--api URL] [--key KEY | --data DIR] [--json]
  svc-cloud edges list --org ID --mode live|test [--site ID] [--json]
  svc-cloud edges revoke --org ID --mode live|test --edge-id ID [--mqtt-url URL --mqtt-dynsec-username U --mqtt-dynsec-password P]
  svc-cloud passkeys rotate --org ID --mode live|test [--grace 720h] [--json]
  svc-cloud kek rotate [--data DIR | --kek-file FILE] [--database-url URL]
  svc-cloud releases keygen --out FILE
  svc-cloud releases add FILE --version V --arch amd64|arm64|arm/7 --sign-with KEYFILE [--data DIR | --database-url URL]
  svc-cloud releases list [--data DIR | --database-url URL]
Every flag also reads an SVC_* variable; run a command with -h for its flags.`

func run(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	if len(args) == 0 {
		return usageError{usage}
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "seed":
		return seed(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], stdout, stderr)
	case "keys":
		if len(args) > 1 && args[1] == "create" {
			return keysCreate(ctx, args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "revoke" {
			return keysRevoke(ctx, args[2:], stdout, stderr)
		}
	case "edges":
		if len(args) > 1 && args[1] == "create" {
			return edgesCreate(ctx, args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "list" {
			return edgesList(ctx, args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "claim" {
			return edgesClaim(ctx, args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "revoke" {
			return edgesRevoke(ctx, args[2:], stdout, stderr)
		}
	case "passkeys":
		if len(args) > 1 && args[1] == "rotate" {
			return passkeysRotate(ctx, args[2:], stdout, stderr)
		}
	case "kek":
		if len(args) > 1 && args[1] == "rotate" {
			return kekRotate(ctx, args[2:], stdout, stderr)
		}
	case "releases":
		if len(args) > 1 && args[1] == "keygen" {
			return releasesKeygen(args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "add" {
			return releasesAdd(ctx, args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "list" {
			return releasesList(ctx, args[2:], stdout, stderr)
		}
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", strings.Join(args, " "), usage)}
}

// parse parses a command's flags; positional arguments are a mistake.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// openStore opens PostgreSQL when a URL is given, else SQLite under the
// data directory, with the key-encryption key that seals its secrets. The
// data directory, when it is used, is made private first (secureDataDir).
func openStore(ctx context.Context, cfg *Config, log *slog.Logger) (cloud.Store, string, error) {
	if cfg.DatabaseURL == "" || (cfg.KEK == "" && cfg.KEKFile == "") {
		if err := secureDataDir(cfg.DataDir, log); err != nil {
			return nil, "", err
		}
	}
	keys, err := cfg.keys(log)
	if err != nil {
		return nil, "", err
	}
	var store interface {
		cloud.Store
		Resealed() int
	}
	kind := "sqlite " + cfg.sqlitePath()
	if cfg.DatabaseURL != "" {
		kind = "postgres"
		var pc *pgxpool.Config
		if pc, err = pgxpool.ParseConfig(cfg.DatabaseURL); err != nil {
			return nil, "", fmt.Errorf("open postgres: %w", err) // pgx hides the password
		}
		if cfg.DBMaxConns > 0 {
			pc.MaxConns = int32(min(cfg.DBMaxConns, math.MaxInt32))
		}
		store, err = postgres.OpenWith(ctx, pc, keys, postgres.Options{NoMigrate: cfg.NoMigrate})
	} else {
		store, err = sqlite.OpenWith(ctx, cfg.sqlitePath(), keys, sqlite.Options{NoMigrate: cfg.NoMigrate, Readers: cfg.DBMaxConns})
	}
	if errors.Is(err, cloud.ErrSchemaBehind) {
		return nil, "", fmt.Errorf("--no-migrate: %w", err)
	}
	if err != nil {
		return nil, "", err
	}
	if n := store.Resealed(); n > 0 {
		log.Info("sealed secrets with the current key-encryption key", "count", n, "kek_id", keys.ID())
	}
	return store, kind, nil
}

// withService validates cfg, opens its store and runs fn on a service
// over it: the shape of every one-shot command.
func withService(ctx context.Context, cfg *Config, fn func(*cloud.Service) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	store, _, err := openStore(ctx, cfg, cfg.logger(os.Stderr))
	if err != nil {
		return err
	}
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	svc.SetEventRenderer(httpapi.RenderEvent)
	if cfg.MQTTDynsecUsername != "" {
		ctl, err := brokerAccounts(cfg, svc)
		if err != nil {
			return err
		}
		defer ctl.Close()
	}
	return fn(svc)
}

func serve(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.serveFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Instance == "" {
		cfg.Instance = newInstance()
	}
	gcpercent.Default(os.Getenv, defaultGCPercent)
	// Every line names the process: several replicas write to one log
	// pipeline.
	log := cfg.logger(stderr).With("instance", cfg.Instance)
	limits, _ := cfg.limits()
	passLink, passAddress, _ := cfg.passLimits()
	proxies, _ := cfg.trustedProxies()
	store, kind, err := openStore(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	rateLimits := cloud.RateLimitsString(limits)
	if cfg.DatabaseURL != "" { // one process owns a SQLite file
		if err := joinReplicas(ctx, svc, &cfg, rateLimits, log); err != nil {
			return err
		}
		defer func() {
			if err := svc.LeaveReplicas(context.WithoutCancel(ctx), cfg.Instance, rateLimits); err != nil {
				log.Warn("leaving the replicas", "err", err)
			}
		}()
	}
	svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: cfg.WebhooksAllowLoopback})
	svc.SetWebhookLease(cfg.WebhookLease)
	syncs, eb, syncState, err := syncParts(ctx, &cfg, svc, log)
	if err != nil {
		return err
	}
	tel := telemetry.New(telemetry.Config{Store: store, Sync: syncState, Version: version, Logger: log})
	// Enrolled appliances are told to connect where edges create's
	// configuration points: the broker's URL and CA.
	api, err := httpapi.New(ctx, httpapi.Config{Service: svc, Logger: log, DocsURL: cfg.DocsURL, RateLimits: limits,
		PassLinkLimit: passLink, PassAddressLimit: passAddress, TrustedProxies: proxies,
		EdgeBroker: httpapi.EdgeBroker{URL: eb.URL, CA: eb.CA}, Observer: tel})
	if err != nil {
		return err
	}
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	ln := httpapi.Listen(tcp, cfg.serverLimits())
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	// The API's listener answers the probes too: a load balancer probes
	// the port it sends traffic to.
	srv := httpapi.NewHTTPServer(tel.Probes(api), cfg.serverLimits(), errorLog)
	servers := []*http.Server{srv}
	listeners := []net.Listener{ln}
	metricsURL := ""
	if cfg.MetricsListen != "" {
		mln, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-listen %s: %w", cfg.MetricsListen, err)
		}
		metricsURL = "http://" + mln.Addr().String() + "/metrics"
		admin := tel.Handler()
		if cfg.Pprof {
			admin = withPprof(admin)
		}
		servers = append(servers, &http.Server{Handler: admin, ReadHeaderTimeout: httpapi.DefaultReadHeaderTimeout,
			WriteTimeout: httpapi.DefaultWriteTimeout, IdleTimeout: httpapi.DefaultIdleTimeout, ErrorLog: errorLog})
		listeners = append(listeners, mln)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	if cfg.Demo {
		if err := demo(ctx, svc, &cfg, base, eb, stdout); err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return err
		}
	}
	log.Info("serving", "url", base, "metrics", metricsURL, "store", kind, "broker", eb.URL, "version", version)
	// The group's context is not the signal's: on SIGTERM the servers
	// keep serving through the drain, and the background work runs on
	// until it ends (work); a part that fails stops everything at once.
	g, gctx := errgroup.WithContext(context.WithoutCancel(ctx))
	work, stopWork := context.WithCancel(gctx)
	defer stopWork()
	for _, part := range syncs {
		g.Go(func() error { return part(work) })
	}
	for i, s := range servers {
		g.Go(func() error {
			if err := s.Serve(listeners[i]); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error { return api.Maintain(work, cfg.MaintainEvery) })
	if cfg.DatabaseURL != "" {
		g.Go(func() error { return heartbeat(work, svc, cfg.Instance, rateLimits, log) })
	}
	hooks := &webhook.Dispatcher{Service: svc, Body: httpapi.EventBody, Log: log, Grace: cfg.ShutdownTimeout, Observe: tel.ObserveWebhook}
	g.Go(func() error { return hooks.Run(work) })
	reminders := &cloud.WaitReminders{Service: svc, Log: log}
	g.Go(func() error { return reminders.Run(work) })
	announcer := &cloud.EdgeAnnouncer{Service: svc, Log: log}
	g.Go(func() error { return announcer.Run(work) })
	g.Go(func() error {
		select {
		case <-ctx.Done():
			drain(gctx, tel, cfg.DrainDelay, log)
		case <-gctx.Done(): // a part failed: no drain
		}
		// Background work stops with the servers: the dispatcher claims
		// no more deliveries, and its attempts in flight finish within
		// the shutdown timeout (its Grace), as requests do.
		stopWork()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Shutdown(shutdown))
		}
		return errors.Join(errs...)
	})
	if err := g.Wait(); err != nil {
		return err // main prints it
	}
	log.Info("stopped")
	return nil
}

// joinReplicas records this process among the replicas sharing the
// database, and refuses to start when a live one enforces other rate
// limits, unless --allow-rate-limit-change makes that a warning.
func joinReplicas(ctx context.Context, svc *cloud.Service, cfg *Config, limits string, log *slog.Logger) error {
	err := svc.JoinReplicas(ctx, cfg.Instance, limits)
	var mismatch *cloud.LimitsMismatchError
	switch {
	case errors.As(err, &mismatch) && cfg.AllowRateLimitChange:
		log.Warn("rate limits differ from a live replica's (allowed by --allow-rate-limit-change): "+
			"until every replica runs with the same, an organisation's limit depends on which replica answers", "err", err)
		return nil
	case mismatch != nil:
		return fmt.Errorf("--rate-limits: %w; give every replica the same --rate-limits, or set --allow-rate-limit-change while rolling out a change", err)
	}
	return err
}

// heartbeat says every cloud.ReplicaHeartbeat that this process is alive
// and with which limits, and warns while a live replica enforces others,
// until ctx ends.
func heartbeat(ctx context.Context, svc *cloud.Service, id, limits string, log *slog.Logger) error {
	t := time.NewTicker(cloud.ReplicaHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := svc.JoinReplicas(ctx, id, limits)
		var mismatch *cloud.LimitsMismatchError
		switch {
		case errors.As(err, &mismatch):
			log.Warn("rate limits differ from a live replica's: an organisation's limit depends on which replica answers", "err", err)
		case err != nil && ctx.Err() == nil:
			log.Warn("replica heartbeat", "err", err)
		}
	}
}

// drain turns /readyz to 503 and waits delay, serving all the while, so
// that load balancers stop sending requests before the listener closes
// (docs/decisions.md, "Running replicas (issue 19)"). It returns early
// when ctx ends (a part failed).
func drain(ctx context.Context, tel *telemetry.Telemetry, delay time.Duration, log *slog.Logger) {
	tel.Drain()
	log.Info("draining: /readyz answers 503 until the listener closes", "drain_delay", delay)
	if delay <= 0 {
		return
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// demo seeds a demo organisation on the first start with --demo and keeps
// its keys in DIR/demo.json (mode 0600), so later starts print them again.
func demo(ctx context.Context, svc *cloud.Service, cfg *Config, base string, broker edgeBroker, stdout io.Writer) error {
	dir := cfg.DataDir
	if dir == "" {
		dir = "."
	}
	path := filepath.Join(dir, "demo.json")
	raw, err := os.ReadFile(path)
	var keys cloud.SeedKeys
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("demo: read %s: %w (delete it to seed a new demo organisation)", path, err)
		}
	case errors.Is(err, os.ErrNotExist):
		res, err := svc.Seed(ctx, "Demo Organisation", cloud.PlanPro)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		keys = res.Keys
		raw, _ = json.MarshalIndent(keys, "", "  ")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	default:
		return fmt.Errorf("demo: %w", err)
	}
	if broker.URL != "" {
		// The demo edge is enrolled by code, as an installer enrols one
		// (make run does these two steps).
		fmt.Fprintf(stdout, "enrol the demo edge: svc-edge enrol --cloud %s --data %s --config %s --kiosk-listen 127.0.0.1:8088\n"+
			"  then claim its code:  svc-cloud edges claim CODE --data %s --api %s   (or POST /v1/edges)\n",
			strings.TrimSuffix(base, "/v1"), filepath.Join(dir, "edge"), filepath.Join(dir, "edge.json"), dir, strings.TrimSuffix(base, "/v1"))
	}
	fmt.Fprintf(stdout, "svc-cloud is serving %s\n\n  secret key, test mode:       %s\n  secret key, live mode:       %s\n  publishable key, test mode:  %s\n  publishable key, live mode:  %s\n\ntry:\n  curl -H 'Authorization: Bearer %s' %s/teams\n\n",
		base, keys.SecretTest, keys.SecretLive, keys.PublishableTest, keys.PublishableLive, keys.SecretTest, base)
	return nil
}

// migrate applies the migrations the database lacks, and the sealing of
// its secrets under the current key-encryption key, and exits: the first
// step of a rolling deploy, before the new program's serve --no-migrate.
func migrate(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfg.storeFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	store, kind, err := openStore(ctx, &cfg, cfg.logger(stderr))
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Ready(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: every migration applied\n", kind)
	return nil
}

func seed(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	cfg.storeFlags(fs)
	plan := fs.String("plan", "pro", "plan of the new organisation: free, growth, pro or enterprise")
	name := fs.String("name", "Demo Organisation", "name of the new organisation")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if !cloud.Plan(*plan).Valid() {
		return usageError{fmt.Sprintf("--plan %q: want free, growth, pro or enterprise", *plan)}
	}
	var res cloud.SeedResult
	err := withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		res, err = svc.Seed(ctx, *name, cloud.Plan(*plan))
		return err
	})
	if err != nil {
		return err
	}
	out := struct {
		OrganisationID string         `json:"organisation_id"`
		Plan           string         `json:"plan"`
		Keys           cloud.SeedKeys `json:"keys"`
		Live           cloud.SeedMode `json:"live"`
		Test           cloud.SeedMode `json:"test"`
	}{res.Organisation.ID, string(res.Organisation.Plan), res.Keys, res.Live, res.Test}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	fmt.Fprintf(stdout, "organisation %s (%s)\nsecret test key: %s\nsecret live key: %s\n", out.OrganisationID, out.Plan, out.Keys.SecretTest, out.Keys.SecretLive)
	return nil
}

func keysCreate(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	cfg.storeFlags(fs)
	org := fs.String("org", "", "organisation ID")
	mode := fs.String("mode", "", "live or test")
	kind := fs.String("kind", "secret", "secret or publishable")
	scopes := fs.String("scopes", "", "comma-separated scopes of a secret key; every scope when empty")
	asJSON := fs.Bool("json", false, "print {\"id\", \"key\"}")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"keys create: --org is required"}
	}
	if !cloud.Mode(*mode).Valid() {
		return usageError{fmt.Sprintf("keys create: --mode %q: want live or test", *mode)}
	}
	if *kind != string(cloud.KindSecret) && *kind != string(cloud.KindPublishable) {
		return usageError{fmt.Sprintf("keys create: --kind %q: want secret or publishable", *kind)}
	}
	var sc []cloud.Scope
	if *scopes != "" {
		for _, s := range strings.Split(*scopes, ",") {
			s = strings.TrimSpace(s)
			if !cloud.Scope(s).Valid() {
				return usageError{fmt.Sprintf("keys create: unknown scope %q", s)}
			}
			sc = append(sc, cloud.Scope(s))
		}
	}
	var k cloud.APIKey
	var secret string
	err := withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		k, secret, err = svc.CreateKey(ctx, cloud.Tenant{OrgID: *org, Mode: cloud.Mode(*mode)}, cloud.KeyKind(*kind), sc)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"id": k.ID, "key": secret})
	}
	fmt.Fprintf(stdout, "%s %s\n", k.ID, secret)
	return nil
}

func keysRevoke(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("keys revoke", flag.ContinueOnError)
	cfg.storeFlags(fs)
	org := fs.String("org", "", "organisation ID")
	keyID := fs.String("key-id", "", "ID of the key to revoke")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *org == "" || *keyID == "" {
		return usageError{"keys revoke: --org and --key-id are required"}
	}
	err := withService(ctx, &cfg, func(svc *cloud.Service) error { return svc.RevokeKey(ctx, *org, *keyID) })
	if err != nil {
		if errors.Is(err, cloud.ErrNotFound) {
			return fmt.Errorf("keys revoke: organisation %s has no key %s", *org, *keyID)
		}
		return err
	}
	fmt.Fprintf(stdout, "revoked %s\n", *keyID)
	return nil
}
