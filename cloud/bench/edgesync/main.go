// Command edgesync is the load program of the edge–cloud sync (issue 4):
// it runs the real parts (a cloud Store and Service, the MQTT cloud half,
// the embedded broker or an external one such as Mosquitto, an edge's
// bbolt cache and its MQTT half, and the svc-edge binary) and measures
// the targets docs/performance.md records under "Edge and sync (issue 4)".
//
// Scenarios (-scenario):
//
//   - drain: N check-in facts of N real visits wait in one edge's outbox
//     after an outage; the edge connects and the outbox drains into the
//     cloud. Prints facts per second and the time to empty, then checks that
//     the cloud holds exactly N edge facts, none in conflict, and every
//     visit checked in once at its fact's time; it exits 1 if not.
//     With an external broker it first measures the broker's own rate
//     for the same messages (-scenario broker's, -broker-n of them) and
//     prints the drain's rate as a share of it (of_broker).
//   - broker: the broker's own rate: N encoded check-in facts published
//     at QoS 1 through -broker and read by a second client, at most
//     -window unacknowledged end to end (the edge half's window), the
//     reader acknowledging at once in protocol acks: the drain's messages
//     and round trip without stores.
//   - propagation: visits are created through the cloud Service at -rate
//     per second for -duration; each visit's commit and the moment the
//     edge's cache View holds it are timed; prints p50, p99 and max. A visit
//     that never reaches the edge fails the run.
//   - memory: an edge cache of N visits is made by a snapshot through the
//     sync, then the real svc-edge (run --simulate) is started on a copy of
//     it -runs times: the time from exec to the first admitted POST
//     /gates/{id}/scan answer, and VmRSS and VmHWM (with RssAnon and
//     RssFile) once it is up and again after 1,000 more scans, and those
//     scans' p50 and p99, request to answer.
//   - visits: N visits at a site of a running svc-cloud serve's own
//     SQLite store (-data, its data directory; -site, -host), made as the
//     other scenarios make theirs, for an appliance enrolled there to take
//     by its normal sync (firmware-images/imagetest's benchmark). The
//     organisation is the one of -key, by default the demo's test-mode
//     key in DATA/demo.json. SQLite lets two processes write the one file
//     (WAL, busy timeout): svc-cloud keeps serving meanwhile.
//
// Stores: -store sqlite (a file in the work directory) or a PostgreSQL URL
// (a fresh schema, dropped at the end). Brokers: -broker embedded
// (sync/broker on a free port, with svc-cloud's access rules from
// cloud/edgesync) or a URL such as tcp://127.0.0.1:1883 (anonymous; the
// cloud half's shared subscriptions are narrowed to the bench's
// organisation, so other users of the broker neither take its messages
// nor get them, and the edge's persistent session and retained status are
// removed at the end).
//
// The visits are made fast: one through the Service, then copies of it,
// each with a visitor of its own, through Store.CreateVisit on several
// goroutines (real rows, each with its change on the site's feed). The
// edge's cache is filled by a snapshot through the sync; the drain's
// outbox is recorded with edge/cache's Record, as a gate would, on tmpfs,
// and copied to the work directory before the edge reconnects. Everything
// but svc-edge, PostgreSQL and an external broker runs in this process.
//
// Lines starting RESULT are the figures; the rest is progress on stderr.
//
//	go run ./cloud/bench/edgesync -scenario drain -store sqlite -broker tcp://127.0.0.1:1883 -n 100000
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/bench/benchutil"
	cloudsync "github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/freeport"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

type options struct {
	scenario     string
	store        string
	broker       string
	n            int
	workers      int
	rate         float64
	duration     time.Duration
	warmup       time.Duration
	runs         int
	edgeBin      string
	dir          string
	keep         bool
	cpuProfile   string
	analyze      bool
	traceSQL     bool
	factLinger   time.Duration
	publishEvery time.Duration
	verbose      bool
	timeout      time.Duration
	halves       int
	notify       bool
	preload      int
	data         string
	key          string
	siteID       string
	hostID       string
	window       int
	brokerN      int
	smaps        bool
}

func main() {
	var o options
	flag.StringVar(&o.scenario, "scenario", "drain", "drain, broker, propagation, memory or visits")
	flag.StringVar(&o.store, "store", "sqlite", "sqlite, or a PostgreSQL URL (a fresh schema is made in it and dropped)")
	flag.StringVar(&o.broker, "broker", "embedded", "embedded, or the URL of an anonymous broker such as tcp://127.0.0.1:1883")
	flag.IntVar(&o.n, "n", 100000, "visits (and, for drain, facts)")
	flag.IntVar(&o.workers, "workers", 8, "goroutines creating the visits through the Store")
	flag.Float64Var(&o.rate, "rate", 50, "propagation: visits created per second")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "propagation: how long visits are created for the measurement")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "propagation: unmeasured creation at the same rate first")
	flag.IntVar(&o.preload, "preload", 0, "propagation: visits the site (and so the edge's cache) holds before the measurement")
	flag.IntVar(&o.runs, "runs", 3, "memory: how many times svc-edge is started")
	flag.StringVar(&o.edgeBin, "edge-bin", "", "memory: the svc-edge binary (default: built as the image builds it, CGO_ENABLED=0 go build -trimpath -buildvcs=false ./edge/cmd/svc-edge)")
	flag.StringVar(&o.dir, "dir", "", "work directory (default: a new one under $TMPDIR, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "drain: write a CPU profile of this process while the outbox drains")
	flag.BoolVar(&o.analyze, "analyze", true, "PostgreSQL: ANALYZE the schema's tables once the visits are made (autovacuum may be off)")
	flag.DurationVar(&o.factLinger, "fact-linger", 0, "the cloud halves' FactLinger (0: mqttsync's default)")
	flag.DurationVar(&o.publishEvery, "publish-every", 0, "the cloud halves' PublishEvery (0: mqttsync's default)")
	flag.BoolVar(&o.traceSQL, "trace-sql", false, "PostgreSQL, drain: count and time each statement the store runs while the outbox drains")
	flag.IntVar(&o.halves, "cloud-halves", 1, "cloud halves (cloud processes) sharing the facts; svc-cloud runs one a process")
	flag.BoolVar(&o.notify, "notify", true, "wake the cloud halves' publishers on every committed change, as svc-cloud does; false leaves them to their 100 ms poll")
	flag.StringVar(&o.data, "data", "", "visits: svc-cloud serve's data directory (its SQLite store cloud.db, sealed with the key in kek)")
	flag.StringVar(&o.key, "key", "", "visits: a secret key of the organisation (default: the test-mode key in DATA/demo.json, as serve --demo writes it)")
	flag.StringVar(&o.siteID, "site", "", "visits: the site's ID")
	flag.StringVar(&o.hostID, "host", "", "visits: the ID of an active person of the organisation, the visits' host")
	flag.IntVar(&o.window, "window", mqttsync.DefaultWindow, "broker, drain: the in-flight window of the edge half and of the broker's own rate")
	flag.IntVar(&o.brokerN, "broker-n", -1, "drain: messages of the broker's own rate measured before the drain (default -n; 0: none); needs -broker URL")
	flag.BoolVar(&o.smaps, "smaps", false, "memory: after the scans, print svc-edge's resident memory by mapping (/proc/PID/smaps)")
	flag.BoolVar(&o.verbose, "v", false, "log the components' info messages")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if flag.NArg() > 0 || o.n < 1 || o.workers < 1 || o.rate <= 0 || o.runs < 1 || o.halves < 1 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	err := run(ctx, o)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgesync: FAILED:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	b := &bench{o: o, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	if o.dir == "" {
		if b.dir, err = os.MkdirTemp("", "edgesync-"); err != nil {
			return err
		}
	} else {
		b.dir = o.dir
		if err := os.MkdirAll(b.dir, 0o750); err != nil {
			return err
		}
	}
	defer func() {
		for i := len(b.cleanup) - 1; i >= 0; i-- {
			b.cleanup[i]()
		}
		if !o.keep && o.dir == "" {
			os.RemoveAll(b.dir)
		} else {
			progress("work directory kept: %s", b.dir)
		}
	}()
	switch o.scenario {
	case "drain":
		return b.drain(ctx)
	case "broker":
		return b.brokerOnly(ctx)
	case "propagation":
		return b.propagation(ctx)
	case "memory":
		return b.memory(ctx)
	case "visits":
		return b.visits(ctx)
	}
	return fmt.Errorf("-scenario %q: want drain, broker, propagation, memory or visits", o.scenario)
}

// progress writes a line of progress on stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// result prints one figure line on stdout.
func (b *bench) result(scenario string, kv ...any) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "RESULT scenario=%s store=%s broker=%s", scenario, b.storeKind(), b.brokerKind())
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case time.Duration:
			v = fmt.Sprintf("%.3fs", x.Seconds())
		case float64:
			v = strconv.FormatFloat(x, 'f', 1, 64)
		}
		fmt.Fprintf(&sb, " %s=%v", kv[i], v)
	}
	fmt.Println(sb.String())
}

// bench holds what one run set up.
type bench struct {
	o       options
	log     *slog.Logger
	dir     string
	cleanup []func()

	store    cloud.Store
	svc      *cloud.Service
	sqlPath  string // SQLite's file
	pgSchema string // PostgreSQL's schema of this run

	t      cloud.Tenant
	actor  cloud.Actor
	site   protocol.Site
	gateID string // the site's entry gate
	hostID string
	edge   cloud.Edge
	secret string // the edge's broker password

	brokerURL           string
	cloudUser, cloudPwd string
	filters             []string
	halves              []*mqttsync.Cloud
	sync                *syncStore
	tracer              *benchutil.SQLTracer // -trace-sql
}

func (b *bench) storeKind() string {
	if b.o.store == "sqlite" {
		return "sqlite"
	}
	return "postgres"
}

func (b *bench) brokerKind() string { return b.o.broker }

// onExit registers f to run when the scenario ends, after those
// registered later.
func (b *bench) onExit(f func()) { b.cleanup = append(b.cleanup, f) }

// openStore opens the store, wrapped by wrap when it is not nil, and the
// service over it.
func (b *bench) openStore(ctx context.Context, wrap func(cloud.Store) cloud.Store) error {
	var s cloud.Store
	if b.o.store == "sqlite" {
		b.sqlPath = filepath.Join(b.dir, "cloud.db")
		keys := kektest.Ring()
		if b.o.data != "" {
			// svc-cloud's default layout (cmd/svc-cloud: sqlitePath, kekPath).
			b.sqlPath = filepath.Join(b.o.data, "cloud.db")
			var err error
			if keys, err = kek.LoadFile(filepath.Join(b.o.data, "kek")); err != nil {
				return err
			}
		}
		st, err := sqlite.Open(ctx, b.sqlPath, keys)
		if err != nil {
			return err
		}
		s = st
	} else {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		schema := "edgesync_" + hex.EncodeToString(rnd[:])
		if err := pgExec(ctx, b.o.store, "CREATE SCHEMA "+schema); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		b.onExit(func() {
			// The store is closed before this runs (cleanup is LIFO).
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := pgExec(dctx, b.o.store, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
				progress("drop schema %s: %v (drop it by hand)", schema, err)
			}
		})
		cfg, err := pgxpool.ParseConfig(b.o.store)
		if err != nil {
			return err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		if b.o.traceSQL {
			b.tracer = &benchutil.SQLTracer{}
			cfg.ConnConfig.Tracer = b.tracer
		}
		st, err := postgres.OpenConfig(ctx, cfg, kektest.Ring())
		if err != nil {
			return err
		}
		s = st
		b.pgSchema = schema
	}
	b.store = s
	b.onExit(func() { s.Close() })
	if wrap != nil {
		s = wrap(s)
	}
	b.svc = cloud.NewService(s, time.Now)
	return nil
}

func pgExec(ctx context.Context, url, q string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

// pgConn connects to the bench's schema.
func (b *bench) pgConn(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(b.o.store)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = b.pgSchema
	return pgx.ConnectConfig(ctx, cfg)
}

// seed makes an organisation (Service.Seed), picks its first test-mode
// site, that site's entry gate and an active host, and enrols an edge.
func (b *bench) seed(ctx context.Context) error {
	res, err := b.svc.Seed(ctx, "Edge sync bench", cloud.PlanEnterprise)
	if err != nil {
		return err
	}
	p, err := b.svc.Authenticate(ctx, res.Keys.SecretTest)
	if err != nil {
		return err
	}
	b.actor = cloud.ActorOf(p)
	b.t = p.Tenant()
	site := res.Test.Sites[0]
	b.site = cloud.EdgeSite(b.t, site.ID)
	b.gateID = site.Gates[0] // Main entrance, an entry gate
	b.hostID = res.Test.People[0]
	b.edge, b.secret, err = b.svc.CreateEdge(ctx, b.t, site.ID, "Bench edge")
	return err
}

// template creates one visit through the Service, expected from an hour
// ago for the next twelve, its pass not sent; it also makes the
// organisation's pass-signing key (so snapshots carry it).
func (b *bench) template(ctx context.Context, name string) (cloud.Visit, error) {
	from := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	until := from.Add(13 * time.Hour)
	v, err := b.svc.CreateVisit(ctx, b.actor, b.visitInput(name, from, until))
	if err != nil {
		return cloud.Visit{}, err
	}
	if _, err := b.svc.PassToken(ctx, b.actor, v.ID); err != nil {
		return cloud.Visit{}, err
	}
	return b.store.Visit(ctx, b.t, v.ID)
}

func (b *bench) visitInput(name string, from, until time.Time) cloud.VisitInput {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return cloud.VisitInput{
		SiteID: cloud.Some(b.site.SiteID), HostID: cloud.Some(b.hostID), Type: cloud.Some("meeting"),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some(name),
			Email: cloud.Some(fmt.Sprintf("load.%s@example.org", hex.EncodeToString(rnd[:])))}),
		ExpectedAt: cloud.Some(&from), ExpectedUntil: cloud.Some(&until), SendPass: cloud.Some(false),
	}
}

// makeVisits stores n visits like tmpl, each with a visitor of its own,
// through Store.CreateVisit on -workers goroutines: real visit rows,
// each with its change on the site's feed, without the Service's
// per-request reads. It returns their IDs in the order made.
func (b *bench) makeVisits(ctx context.Context, tmpl cloud.Visit, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		out[i] = ids.New(ids.Visit)
	}
	var next, done atomic.Int64
	var failed atomic.Bool
	start := time.Now()
	stopTick := make(chan struct{})
	// Progress, and on PostgreSQL an ANALYZE as the tables grow: a planner
	// still believing them empty reads each visit's visitor by walking the
	// visitors index, and creation slows down as it goes (autovacuum, which
	// would analyze them, may be off).
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		nextAnalyze, tick := int64(1000), 0
		for {
			select {
			case <-stopTick:
				return
			case <-t.C:
				tick++
				d := done.Load()
				if tick%5 == 0 {
					progress("  %d of %d visits made", d, n)
				}
				if d >= nextAnalyze && d < int64(n) {
					if err := b.analyzeSchema(ctx); err != nil {
						progress("  analyze: %v", err)
					}
					nextAnalyze *= 4
				}
			}
		}
	}()
	defer close(stopTick)
	var wg sync.WaitGroup
	errs := make(chan error, b.o.workers)
	for range b.o.workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil || failed.Load() {
					return
				}
				now := time.Now().UTC().Truncate(time.Microsecond)
				vis := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: b.t, Name: fmt.Sprintf("Load Visitor %d", i),
					Email: fmt.Sprintf("load.%d.%s@example.org", i, out[i][len(out[i])-8:]), CreatedAt: now, UpdatedAt: now}
				v := tmpl
				v.ID, v.VisitorID, v.Visitor, v.CreatedAt, v.UpdatedAt = out[i], vis.ID, vis, now, now
				v.Hosts = slices.Clone(tmpl.Hosts)
				v.Pass.ForVisitID = v.ID
				v.Pass.Channels = []string{}
				if err := b.store.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vis}); err != nil {
					failed.Store(true)
					errs <- fmt.Errorf("create visit %d: %w", i, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	d := time.Since(start)
	progress("%d visits made in %.1f s (%.0f/s, %d workers)", n, d.Seconds(), float64(n)/d.Seconds(), b.o.workers)
	return out, b.analyzeSchema(ctx)
}

// analyzeSchema runs ANALYZE on each table of the PostgreSQL schema, as
// autovacuum would have after so many inserts (it is off on the
// development machine's instance).
func (b *bench) analyzeSchema(ctx context.Context) error {
	if b.pgSchema == "" || !b.o.analyze {
		return nil
	}
	conn, err := b.pgConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return benchutil.AnalyzeSchema(ctx, conn, b.pgSchema, false)
}

// markPublished hands every unpublished change of the feeds to a
// publisher that takes them: the state of a cloud that published them
// before the scenario starts.
func (b *bench) markPublished(ctx context.Context) error {
	for {
		n, err := b.svc.PublishFeeds(ctx, 5000, func(protocol.Site, []protocol.Change) error { return nil })
		if err != nil || n == 0 {
			return err
		}
	}
}

// head is the site feed's last sequence.
func (b *bench) head(ctx context.Context) (uint64, error) {
	_, head, err := b.svc.SiteChanges(ctx, b.site, 0, 1)
	return head, err
}

// startBroker starts the embedded broker, or takes the external one's URL.
func (b *bench) startBroker(ctx context.Context) error {
	if b.o.broker != "embedded" {
		b.brokerURL = b.o.broker
		// Anonymous: the names are sent and ignored. The cloud half reads
		// only the bench organisation's topics, as the Mosquitto suite of
		// sync/mqttsync does on a shared broker.
		for _, f := range []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus} {
			b.filters = append(b.filters, strings.Replace(f, "/+/+/sites/", "/"+string(b.t.Mode)+"/"+b.t.OrgID+"/sites/", 1))
		}
		return nil
	}
	pass, err := cloudsync.CloudPassword(ctx, b.svc)
	if err != nil {
		return err
	}
	b.cloudUser, b.cloudPwd = cloudsync.CloudUsername, pass
	// mochi warns of every connection it closes on the way out; errors only,
	// unless -v.
	blog := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if b.o.verbose {
		blog = b.log
	}
	br, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Auth: cloudsync.Authenticator(b.svc, pass), Logger: blog.With("part", "broker")})
	if err != nil {
		return err
	}
	b.brokerURL = "tcp://" + br.Addr()
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := br.Run(bctx); err != nil {
			progress("broker: %v", err)
		}
	}()
	b.onExit(func() { cancel(); <-done })
	return nil
}

// startCloud runs -cloud-halves cloud halves over the service (one, as
// svc-cloud serve does, unless the flag says more: several cloud processes
// dividing the facts through the shared subscriptions) until the bench
// ends. With -notify (the default, as svc-cloud) each committed change
// wakes the halves' publishers at once.
func (b *bench) startCloud(ctx context.Context) error {
	b.sync = &syncStore{Store: cloudsync.Store{Service: b.svc}}
	for i := range b.o.halves {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		half, err := mqttsync.NewCloud(mqttsync.CloudConfig{
			BrokerURL: b.brokerURL, Username: b.cloudUser, Password: b.cloudPwd,
			ClientID: "edgesync-bench-" + hex.EncodeToString(rnd[:]), Filters: b.filters,
			Store: b.sync, Logger: b.log.With("part", "cloud-sync", "half", i), FactLinger: b.o.factLinger,
			PublishEvery: b.o.publishEvery,
		})
		if err != nil {
			return err
		}
		if b.o.notify {
			b.svc.OnChange(half.Notify)
		}
		b.halves = append(b.halves, half)
		hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = half.Run(hctx)
		}()
		b.onExit(func() {
			// The edges stop first; their offline status is recorded
			// before the half stops.
			time.Sleep(200 * time.Millisecond)
			cancel()
			<-done
		})
		if err := waitFor(ctx, 30*time.Second, "the cloud half to connect", func() bool { return half.State().Connected }); err != nil {
			return err
		}
	}
	return nil
}

// cloudState adds up the cloud halves' counters.
func (b *bench) cloudState() mqttsync.CloudState {
	var sum mqttsync.CloudState
	for _, h := range b.halves {
		s := h.State()
		sum.FactsApplied += s.FactsApplied
		sum.FactsRejected += s.FactsRejected
		sum.FactsFailed += s.FactsFailed
		sum.AckReplies += s.AckReplies
		sum.Snapshots += s.Snapshots
		sum.Dropped += s.Dropped
	}
	return sum
}

// runEdge runs an edge half over st until the returned stop is called.
func (b *bench) runEdge(ctx context.Context, st mqttsync.EdgeStore) (*mqttsync.Edge, func(), error) {
	e, err := mqttsync.NewEdge(mqttsync.EdgeConfig{
		BrokerURL: b.brokerURL, Username: b.edge.Username, Password: b.secret,
		Site: b.site, EdgeID: b.edge.ID, Store: st, Logger: b.log.With("part", "edge-sync"), Software: "edgesync-bench",
		Window: b.o.window,
	})
	if err != nil {
		return nil, nil, err
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Run(ectx)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	b.onExit(stop)
	if b.o.broker != "embedded" {
		b.onExit(func() { forget(b.brokerURL, b.edge.ID, b.site.Status(b.edge.ID)) })
	}
	return e, stop, nil
}

// forget removes an edge's persistent session and retained status from
// an external broker, which keeps them after the bench.
func forget(url, clientID, statusTopic string) {
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(clientID).SetCleanSession(true).SetProtocolVersion(4)
	c := paho.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		progress("forget session %s: %v", clientID, tok.Error())
		return
	}
	c.Publish(statusTopic, 1, true, []byte{}).WaitTimeout(5 * time.Second)
	c.Disconnect(100)
}

// syncEdge runs an edge half over c until its cache holds the feed's head
// and has completed a resync (a snapshot, for a new cache), then stops
// it. It returns how long that took.
func (b *bench) syncEdge(ctx context.Context, c *cache.Cache, wantVisits int) (time.Duration, error) {
	head, err := b.head(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	e, stop, err := b.runEdge(ctx, c)
	if err != nil {
		return 0, err
	}
	defer stop()
	err = waitFor(ctx, 10*time.Minute, "the edge's snapshot", func() bool {
		st := e.State()
		return st.Seq >= head && !st.SyncedAt.IsZero() && c.View().Counts().Visits >= wantVisits
	})
	return time.Since(start), err
}

// waitFor polls cond every 2 ms until it holds, ctx ends or limit passes.
func waitFor(ctx context.Context, limit time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not after %v", what, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// syncStore is the cloud half's store as svc-cloud has it (cloud/edgesync),
// timing each ApplyFacts call and counting its facts.
type syncStore struct {
	cloudsync.Store

	mu      sync.Mutex
	applies []time.Duration
	sizes   []int
}

func (s *syncStore) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	start := time.Now()
	errs, err := s.Store.ApplyFacts(ctx, site, facts)
	d := time.Since(start)
	s.mu.Lock()
	s.applies = append(s.applies, d)
	s.sizes = append(s.sizes, len(facts))
	s.mu.Unlock()
	return errs, err
}

func (s *syncStore) batchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sizes)
}

func (s *syncStore) applyTimes() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.applies)
}

// observedCache is the edge half's store: the cache, with the time of
// each write the edge half makes, and a callback once the outbox is empty.
type observedCache struct {
	*cache.Cache

	mu      sync.Mutex
	seen    map[string]time.Time // a visit's first arrival in the View
	emptied time.Time
	acks    int
	ackTime time.Duration
	applies int
	changes int
	appTime time.Duration
}

func newObserved(c *cache.Cache) *observedCache {
	return &observedCache{Cache: c, seen: make(map[string]time.Time)}
}

func (o *observedCache) Apply(cs []protocol.Change) (int, error) {
	start := time.Now()
	n, err := o.Cache.Apply(cs)
	now := time.Now() // the new View is in place
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applies++
	o.changes += n
	o.appTime += now.Sub(start)
	if err == nil {
		for _, ch := range cs {
			if ch.Visit != nil {
				if _, ok := o.seen[ch.Visit.ID]; !ok {
					o.seen[ch.Visit.ID] = now
				}
			}
		}
	}
	return n, err
}

func (o *observedCache) ReplaceSnapshot(parts []protocol.Snapshot) error {
	err := o.Cache.ReplaceSnapshot(parts)
	now := time.Now()
	if err == nil {
		o.mu.Lock()
		for _, p := range parts {
			for _, v := range p.Visits {
				if _, ok := o.seen[v.ID]; !ok {
					o.seen[v.ID] = now
				}
			}
		}
		o.mu.Unlock()
	}
	return err
}

func (o *observedCache) Ack(acks []string) (int, error) {
	start := time.Now()
	n, err := o.Cache.Ack(acks)
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acks++
	o.ackTime += now.Sub(start)
	if err == nil && o.emptied.IsZero() && o.View().Counts().Outbox == 0 {
		o.emptied = now
	}
	return n, err
}

func (o *observedCache) seenAt(id string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.seen[id]
	return t, ok
}

// ---- drain ----

func (b *bench) drain(ctx context.Context) error {
	n := b.o.n
	if err := b.openStore(ctx, nil); err != nil {
		return err
	}
	if err := b.seed(ctx); err != nil {
		return err
	}
	tmpl, err := b.template(ctx, "Template Visitor")
	if err != nil {
		return err
	}
	progress("making %d visits on %s", n, b.storeKind())
	visits, err := b.makeVisits(ctx, tmpl, n)
	if err != nil {
		return err
	}
	if err := b.markPublished(ctx); err != nil {
		return err
	}
	if err := b.startBroker(ctx); err != nil {
		return err
	}
	if err := b.startCloud(ctx); err != nil {
		return err
	}

	// Before the outage: the edge is current. Its cache is made on tmpfs
	// when there is one, so that recording the outbox (an fsync'd commit
	// per fact) takes less time; it is copied to the work directory before
	// the measurement.
	prep := b.dir
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if prep, err = os.MkdirTemp("/dev/shm", "edgesync-"); err != nil {
			return err
		}
		defer os.RemoveAll(prep)
	}
	c, err := cache.Open(filepath.Join(prep, "cache.db"), cache.Options{EdgeID: b.edge.ID})
	if err != nil {
		return err
	}
	d, err := b.syncEdge(ctx, c, n+1)
	if err != nil {
		c.Close()
		return err
	}
	progress("edge synced: snapshot of %d visits in %.1f s", c.View().Counts().Visits, d.Seconds())
	b.result("snapshot", "visits", c.View().Counts().Visits, "seconds", d)

	// The outage: the gate checks every visit in, one scan each.
	start := time.Now()
	at0 := time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Microsecond)
	facts := make(map[string]protocol.Fact, n) // by visit
	for i, id := range visits {
		v, ok := c.View().Visit(id)
		if !ok {
			c.Close()
			return fmt.Errorf("visit %s is not in the edge's cache after the snapshot", id)
		}
		at := at0.Add(time.Duration(i) * 10 * time.Microsecond)
		v.Status, v.CheckedInAt, v.Uses = "checked_in", &at, v.Uses+1
		f, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{v}}, protocol.Fact{ID: ids.New(ids.Fact),
			Kind: protocol.FactCheckIn, At: at, GateID: b.gateID, VisitID: id, PassVisitID: id})
		if err != nil {
			c.Close()
			return fmt.Errorf("record fact %d: %w", i, err)
		}
		facts[id] = f
	}
	progress("%d facts recorded in the outbox in %.1f s", n, time.Since(start).Seconds())
	if err := c.Close(); err != nil {
		return err
	}
	path := filepath.Join(b.dir, "edge-cache.db")
	if prep != b.dir {
		if err := copyFile(filepath.Join(prep, "cache.db"), path); err != nil {
			return err
		}
		os.RemoveAll(prep)
	} else if err := os.Rename(filepath.Join(prep, "cache.db"), path); err != nil {
		return err
	}
	c, err = cache.Open(path, cache.Options{EdgeID: b.edge.ID})
	if err != nil {
		return err
	}
	defer c.Close()
	if depth, _, _ := c.OutboxStats(); depth != n {
		return fmt.Errorf("outbox holds %d facts, want %d", depth, n)
	}
	oc := newObserved(c)

	// The broker's own rate for these very messages, in this run, just
	// before the drain (an external broker only: the embedded one lets no
	// anonymous client in).
	var brokerTook time.Duration
	brokerN := b.o.brokerN
	if brokerN < 0 {
		brokerN = n
	}
	if brokerN > 0 && b.o.broker != "embedded" {
		all := make([]protocol.Fact, 0, brokerN)
		for i := 0; len(all) < brokerN; i++ {
			all = append(all, facts[visits[i%n]])
		}
		payloads, err := factPayloads(all)
		if err != nil {
			return err
		}
		progress("the broker's own rate: %d messages, window %d", brokerN, b.o.window)
		load := benchutil.LoadAvg()
		if brokerTook, err = brokerRate(ctx, b.brokerURL, payloads, b.o.window); err != nil {
			return err
		}
		b.result("broker", "messages", brokerN, "window", b.o.window, "seconds", brokerTook,
			"msgs_per_s", float64(brokerN)/brokerTook.Seconds(), "load", fmt.Sprintf("%q", load))
	}

	// The edge comes back.
	loadStart := benchutil.LoadAvg()
	if b.o.cpuProfile != "" {
		f, err := os.Create(b.o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	before := b.cloudState()
	if b.tracer != nil {
		b.tracer.On(true)
	}
	progress("edge reconnects with %d facts waiting", n)
	start = time.Now()
	e, stop, err := b.runEdge(ctx, oc)
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Second)
	err = func() error {
		defer tick.Stop()
		deadline := time.Now().Add(b.o.timeout)
		for {
			oc.mu.Lock()
			emptied := oc.emptied
			oc.mu.Unlock()
			if !emptied.IsZero() {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				st, cs := e.State(), b.cloudState()
				progress("  %.0f s: outbox %d, in flight %d, published %d, cloud applied %d failed %d rejected %d",
					time.Since(start).Seconds(), st.OutboxDepth, st.InFlight, st.Counters.FactsPublished,
					cs.FactsApplied-before.FactsApplied, cs.FactsFailed, cs.FactsRejected)
			case <-time.After(2 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return errors.New("the outbox did not empty in time")
			}
		}
	}()
	if b.o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if b.tracer != nil {
		b.tracer.On(false)
	}
	if err != nil {
		return err
	}
	oc.mu.Lock()
	empty := oc.emptied.Sub(start)
	oc.mu.Unlock()
	progress("outbox empty after %.2f s", empty.Seconds())

	// The cloud's changes of the visits reach the edge.
	head, err := b.head(ctx)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Minute, "the edge to catch up with the feed", func() bool { return c.Seq() >= head }); err != nil {
		return err
	}
	caught := time.Since(start)
	es, cs := e.State(), b.cloudState()
	stop()
	oc.mu.Lock()
	acks, ackTime, applies, changes, appTime := oc.acks, oc.ackTime, oc.applies, oc.changes, oc.appTime
	oc.mu.Unlock()

	ap := b.sync.applyTimes()
	slices.Sort(ap)
	sizes := b.sync.batchSizes()
	slices.Sort(sizes)
	sizeAt := func(p float64) int {
		if len(sizes) == 0 {
			return 0
		}
		return sizes[min(len(sizes)-1, int(p/100*float64(len(sizes))))]
	}
	var apTotal time.Duration
	for _, d := range ap {
		apTotal += d
	}
	if b.tracer != nil {
		b.tracer.Report(os.Stdout, "fact", n)
	}
	rate := float64(n) / empty.Seconds()
	ratio := "-"
	if brokerTook > 0 {
		ratio = fmt.Sprintf("%.2f", rate/(float64(brokerN)/brokerTook.Seconds()))
	}
	b.result("drain", "facts", n, "empty_after", empty, "facts_per_s", rate, "of_broker", ratio,
		"load_start", fmt.Sprintf("%q", loadStart), "load_end", fmt.Sprintf("%q", benchutil.LoadAvg()),
		"feed_caught_up_after", caught,
		"published", es.Counters.FactsPublished, "republished", int(es.Counters.FactsPublished)-n,
		"cloud_applied", cs.FactsApplied-before.FactsApplied, "cloud_failed", cs.FactsFailed-before.FactsFailed,
		"cloud_rejected", cs.FactsRejected-before.FactsRejected, "ack_replies", cs.AckReplies-before.AckReplies,
		"applyfacts_calls", len(ap), "batch_mean", fmt.Sprintf("%.1f", float64(n)/float64(max(len(ap), 1))),
		"batch_p50", sizeAt(50), "batch_max", sizeAt(100),
		"applyfacts_mean_ms", fmt.Sprintf("%.3f", benchutil.MS(apTotal)/float64(max(len(ap), 1))),
		"applyfacts_p50_ms", fmt.Sprintf("%.3f", benchutil.MS(benchutil.Pct(ap, 50))), "applyfacts_p99_ms", fmt.Sprintf("%.3f", benchutil.MS(benchutil.Pct(ap, 99))),
		"applyfacts_total", apTotal,
		"edge_acks", acks, "edge_ack_total", ackTime, "edge_applies", applies, "edge_changes", changes, "edge_apply_total", appTime,
		"edge_snapshots", es.Counters.Snapshots, "edge_resyncs", es.Counters.ResyncRequests, "edge_dropped", es.Counters.Dropped,
		"edge_connects", es.Counters.Connects, "cloud_snapshots", cs.Snapshots-before.Snapshots, "cloud_dropped", cs.Dropped-before.Dropped)
	return b.verifyDrain(ctx, c, visits, facts)
}

// verifyDrain checks that the cloud has each fact once, and each visit
// checked in once at its fact's time, at the fact's gate, and that the
// edge agrees.
func (b *bench) verifyDrain(ctx context.Context, c *cache.Cache, visits []string, facts map[string]protocol.Fact) error {
	n := len(visits)
	var problems []string
	bad := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	total, edgeFacts, conflicts, distinct, err := b.countFacts(ctx)
	if err != nil {
		return err
	}
	if total != n || edgeFacts != n || distinct != n || conflicts != 0 {
		bad("edge_facts: %d rows, %d of the edge, %d distinct visits, %d in conflict; want %d, %d, %d, 0",
			total, edgeFacts, distinct, conflicts, n, n, n)
	}
	// Every visit, through the Store, and every fact by its ID.
	want := make(map[string]bool, n)
	for _, id := range visits {
		want[id] = true
	}
	seen := 0
	p := cloud.Page{Limit: 100}
	for {
		vs, more, err := b.store.ListVisits(ctx, b.t, cloud.VisitFilter{SiteID: b.site.SiteID}, p)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if !want[v.ID] {
				continue
			}
			seen++
			f := facts[v.ID]
			switch {
			case v.Status != cloud.VisitCheckedIn:
				bad("visit %s is %s", v.ID, v.Status)
			case v.Pass.Uses != 1:
				bad("visit %s: pass used %d times", v.ID, v.Pass.Uses)
			case v.CheckedInAt == nil || !v.CheckedInAt.Equal(f.At):
				bad("visit %s checked in at %v, its fact at %v", v.ID, v.CheckedInAt, f.At)
			case v.GateID != b.gateID:
				bad("visit %s at gate %q", v.ID, v.GateID)
			}
		}
		if !more || len(vs) == 0 {
			break
		}
		last := vs[len(vs)-1]
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if seen != n {
		bad("%d of the %d visits listed", seen, n)
	}
	checked := 0
	for _, id := range visits {
		f := facts[id]
		ef, err := b.store.EdgeFact(ctx, b.t, f.ID)
		if err != nil {
			bad("fact %s: %v", f.ID, err)
			continue
		}
		if ef.Fact.VisitID != id || ef.Fact.Counter != f.Counter || ef.Conflict != "" {
			bad("fact %s: %+v", f.ID, ef)
		}
		checked++
		if checked%20000 == 0 {
			progress("  %d facts read back", checked)
		}
	}
	// The edge: nothing waits, and every visit is checked in once.
	if depth, _, err := c.OutboxStats(); err != nil || depth != 0 {
		bad("edge outbox holds %d facts (%v)", depth, err)
	}
	v := c.View()
	for _, id := range visits {
		ev, ok := v.Visit(id)
		if !ok || ev.Status != "checked_in" || ev.Uses != 1 {
			bad("edge visit %s: %+v", id, ev)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("verification failed:\n  %s", strings.Join(problems, "\n  "))
	}
	progress("verified: %d edge facts, none in conflict; %d visits checked in once, in the cloud and on the edge", n, n)
	b.result("drain-verified", "edge_facts", total, "visits_checked_in_once", seen)
	return nil
}

// countFacts counts the edge_facts rows: all, the bench edge's, those in
// conflict and the distinct visits they name.
func (b *bench) countFacts(ctx context.Context) (total, edge, conflicts, distinct int, err error) {
	const q = `SELECT (SELECT count(*) FROM edge_facts),
		(SELECT count(*) FROM edge_facts WHERE edge_id = $1),
		(SELECT count(*) FROM edge_facts WHERE conflict IS NOT NULL),
		(SELECT count(DISTINCT visit_id) FROM edge_facts WHERE edge_id = $1)`
	if b.sqlPath != "" {
		db, err := sql.Open("sqlite", "file:"+b.sqlPath+"?mode=ro")
		if err != nil {
			return 0, 0, 0, 0, err
		}
		defer db.Close()
		err = db.QueryRowContext(ctx, strings.ReplaceAll(q, "$1", "?1"), b.edge.ID).Scan(&total, &edge, &conflicts, &distinct)
		return total, edge, conflicts, distinct, err
	}
	conn, err := b.pgConn(ctx)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, q, b.edge.ID).Scan(&total, &edge, &conflicts, &distinct)
	return total, edge, conflicts, distinct, err
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ---- propagation ----

// commitStore is the Store under the Service, noting when each new visit
// committed: when Store.CreateVisit returned, and when it was called (the
// commit happened between the two; a goroutine preempted between the
// commit and its return can see the edge get the visit first).
type commitStore struct {
	cloud.Store
	mu      sync.Mutex
	commits map[string]time.Time
	calls   map[string]time.Time
}

func (s *commitStore) CreateVisit(ctx context.Context, v cloud.Visit, w cloud.VisitWrites) error {
	called := time.Now()
	err := s.Store.CreateVisit(ctx, v, w)
	if err == nil {
		now := time.Now()
		s.mu.Lock()
		s.commits[v.ID], s.calls[v.ID] = now, called
		s.mu.Unlock()
	}
	return err
}

func (b *bench) propagation(ctx context.Context) error {
	cs := &commitStore{commits: make(map[string]time.Time), calls: make(map[string]time.Time)}
	if err := b.openStore(ctx, func(s cloud.Store) cloud.Store { cs.Store = s; return cs }); err != nil {
		return err
	}
	if err := b.seed(ctx); err != nil {
		return err
	}
	tmpl, err := b.template(ctx, "First Visitor")
	if err != nil {
		return err
	}
	if b.o.preload > 0 {
		// A site with this many visits already: the edge's cache holds
		// them (by snapshot) while the new ones arrive.
		progress("making %d visits on %s", b.o.preload, b.storeKind())
		if _, err := b.makeVisits(ctx, tmpl, b.o.preload); err != nil {
			return err
		}
		if err := b.markPublished(ctx); err != nil {
			return err
		}
	}
	if err := b.startBroker(ctx); err != nil {
		return err
	}
	if err := b.startCloud(ctx); err != nil {
		return err
	}
	c, err := cache.Open(filepath.Join(b.dir, "edge-cache.db"), cache.Options{EdgeID: b.edge.ID})
	if err != nil {
		return err
	}
	defer c.Close()
	oc := newObserved(c)
	head, err := b.head(ctx)
	if err != nil {
		return err
	}
	e, stop, err := b.runEdge(ctx, oc)
	if err != nil {
		return err
	}
	defer stop()
	if err := waitFor(ctx, 10*time.Minute, "the edge's first sync", func() bool {
		st := e.State()
		return st.Seq >= head && !st.SyncedAt.IsZero()
	}); err != nil {
		return err
	}

	// Visits at a steady rate: each starts on its own goroutine at its
	// slot, so a slow commit does not delay the next.
	interval := time.Duration(float64(time.Second) / b.o.rate)
	create := func(d time.Duration) ([]string, time.Duration, error) {
		n := int(d / interval)
		out := make([]string, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
				select {
				case <-ctx.Done():
					return nil, 0, ctx.Err()
				case <-time.After(wait):
				}
			}
			wg.Go(func() {
				from := time.Now().UTC().Truncate(time.Second)
				v, err := b.svc.CreateVisit(ctx, b.actor, b.visitInput(fmt.Sprintf("Steady Visitor %d", i), from, from.Add(8*time.Hour)))
				if err != nil {
					errs <- err
					return
				}
				out[i] = v.ID
			})
		}
		wg.Wait()
		close(errs)
		return out, time.Since(start), <-errs
	}
	if b.o.warmup > 0 {
		if _, _, err := create(b.o.warmup); err != nil {
			return err
		}
	}
	progress("creating visits at %.0f/s for %v", b.o.rate, b.o.duration)
	made, took, err := create(b.o.duration)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, "every visit on the edge", func() bool {
		for _, id := range made {
			if _, ok := oc.seenAt(id); !ok {
				return false
			}
		}
		return true
	}); err != nil {
		missing := 0
		for _, id := range made {
			if _, ok := oc.seenAt(id); !ok {
				missing++
			}
		}
		return fmt.Errorf("%d of %d visits never reached the edge: %w", missing, len(made), err)
	}
	lat := make([]time.Duration, 0, len(made))
	fromCall := make([]time.Duration, 0, len(made))
	cs.mu.Lock()
	for _, id := range made {
		at, _ := oc.seenAt(id)
		commit, ok := cs.commits[id]
		if !ok {
			cs.mu.Unlock()
			return fmt.Errorf("no commit time for visit %s", id)
		}
		if _, ok := c.View().Visit(id); !ok {
			cs.mu.Unlock()
			return fmt.Errorf("visit %s was seen but is not in the View", id)
		}
		lat = append(lat, at.Sub(commit))
		fromCall = append(fromCall, at.Sub(cs.calls[id]))
	}
	cs.mu.Unlock()
	slices.Sort(lat)
	slices.Sort(fromCall)
	oc.mu.Lock()
	applies, changes := oc.applies, oc.changes
	oc.mu.Unlock()
	b.result("propagation", "visits", len(made), "rate_per_s", float64(len(made))/took.Seconds(),
		"p50_ms", fmt.Sprintf("%.1f", benchutil.MS(benchutil.Pct(lat, 50))), "p99_ms", fmt.Sprintf("%.1f", benchutil.MS(benchutil.Pct(lat, 99))),
		"max_ms", fmt.Sprintf("%.1f", benchutil.MS(lat[len(lat)-1])), "min_ms", fmt.Sprintf("%.1f", benchutil.MS(lat[0])),
		"from_call_p50_ms", fmt.Sprintf("%.1f", benchutil.MS(benchutil.Pct(fromCall, 50))), "from_call_p99_ms", fmt.Sprintf("%.1f", benchutil.MS(benchutil.Pct(fromCall, 99))),
		"from_call_max_ms", fmt.Sprintf("%.1f", benchutil.MS(fromCall[len(fromCall)-1])),
		"edge_applies", applies, "edge_changes", changes, "cached_visits", c.View().Counts().Visits)
	return nil
}

// ---- memory ----

func (b *bench) memory(ctx context.Context) error {
	n := b.o.n
	if err := b.openStore(ctx, nil); err != nil {
		return err
	}
	if err := b.seed(ctx); err != nil {
		return err
	}
	tmpl, err := b.template(ctx, "Template Visitor")
	if err != nil {
		return err
	}
	progress("making %d visits on %s", n, b.storeKind())
	visits, err := b.makeVisits(ctx, tmpl, n)
	if err != nil {
		return err
	}
	if err := b.markPublished(ctx); err != nil {
		return err
	}
	if err := b.startBroker(ctx); err != nil {
		return err
	}
	if err := b.startCloud(ctx); err != nil {
		return err
	}
	pristine := filepath.Join(b.dir, "pristine.db")
	c, err := cache.Open(pristine, cache.Options{EdgeID: b.edge.ID})
	if err != nil {
		return err
	}
	d, err := b.syncEdge(ctx, c, n+1)
	counts := c.View().Counts()
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	st, err := os.Stat(pristine)
	if err != nil {
		return err
	}
	progress("edge cache of %d visits by snapshot in %.1f s: %.1f MB", counts.Visits, d.Seconds(), float64(st.Size())/1e6)
	b.result("snapshot", "visits", counts.Visits, "seconds", d, "cache_file_mb", fmt.Sprintf("%.1f", float64(st.Size())/1e6))

	bin := b.o.edgeBin
	if bin == "" {
		// Built as the appliance's image builds it (firmware-images/
		// mkimage.sh): static, without cgo. A build with cgo links libc
		// and ld.so, whose pages were 1.3–1.5 MiB of its resident memory.
		bin = filepath.Join(b.dir, "svc-edge")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", bin, "./edge/cmd/svc-edge")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build svc-edge (run from the repository's root, or pass -edge-bin): %w", err)
		}
	}
	ports, err := freeport.Pick(1)
	if err != nil {
		return err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	runCache := filepath.Join(b.dir, "run", "cache.db")
	cfgPath := filepath.Join(b.dir, "edge.json")
	if err := b.writeEdgeConfig(cfgPath, runCache, listen); err != nil {
		return err
	}
	if b.o.broker != "embedded" {
		b.onExit(func() { forget(b.brokerURL, b.edge.ID, b.site.Status(b.edge.ID)) })
	}
	for r := range b.o.runs {
		tok, err := b.svc.PassToken(ctx, b.actor, visits[r])
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(runCache), 0o750); err != nil {
			return err
		}
		if err := copyFile(pristine, runCache); err != nil {
			return err
		}
		if err := b.edgeRun(ctx, r, bin, cfgPath, listen, tok, visits[r]); err != nil {
			return err
		}
	}
	return nil
}

// visits makes -n visits at -site of the store in -data, hosted by -host:
// one through the Service, expected from an hour ago for thirteen hours,
// and copies of it through the Store (makeVisits), each with its change
// on the site's feed.
func (b *bench) visits(ctx context.Context) error {
	if b.o.data == "" || b.o.siteID == "" || b.o.hostID == "" || b.o.store != "sqlite" {
		return errors.New("-scenario visits needs -data, -site and -host, and the store is the data directory's SQLite")
	}
	key := b.o.key
	if key == "" {
		raw, err := os.ReadFile(filepath.Join(b.o.data, "demo.json"))
		if err != nil {
			return fmt.Errorf("no -key, and the demo's keys: %w", err)
		}
		var keys cloud.SeedKeys
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("demo.json: %w", err)
		}
		key = keys.SecretTest
	}
	if err := b.openStore(ctx, nil); err != nil {
		return err
	}
	p, err := b.svc.Authenticate(ctx, key)
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	b.actor, b.t = cloud.ActorOf(p), p.Tenant()
	b.site = cloud.EdgeSite(b.t, b.o.siteID)
	b.hostID = b.o.hostID
	start := time.Now()
	tmpl, err := b.template(ctx, "Template Visitor")
	if err != nil {
		return err
	}
	if _, err := b.makeVisits(ctx, tmpl, b.o.n); err != nil {
		return err
	}
	b.result("visits", "visits", b.o.n+1, "seconds", time.Since(start))
	return nil
}

// writeEdgeConfig writes svc-edge's configuration: the bench edge, one gate
// (the site's entry gate) with a camera reader and a simulated relay of a
// 1 ms pulse, so a scan's answer does not wait half a second for it.
func (b *bench) writeEdgeConfig(path, cachePath, listen string) error {
	type reader struct {
		Kind string `json:"kind"`
	}
	type relay struct {
		Pin       string `json:"pin"`
		ActiveLow bool   `json:"active_low"`
		Pulse     string `json:"pulse"`
	}
	type gate struct {
		GateID    string   `json:"gate_id"`
		Readers   []reader `json:"readers"`
		Relay     relay    `json:"relay"`
		WhenStale string   `json:"when_stale"`
	}
	cfg := map[string]any{
		"site":    map[string]string{"mode": b.site.Mode, "org_id": b.site.OrgID, "site_id": b.site.SiteID},
		"edge_id": b.edge.ID,
		"broker": map[string]string{"url": b.brokerURL, "username": b.edge.Username,
			"password": b.secret},
		"data_dir":   filepath.Dir(cachePath),
		"cache_path": cachePath,
		"listen":     listen,
		"gates": []gate{{GateID: b.gateID, Readers: []reader{{Kind: "camera"}},
			Relay: relay{Pin: "SIM17", Pulse: "1ms"}, WhenStale: "fail_secure"}},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

// edgeRun starts svc-edge, times the first admitted scan from exec, reads
// its memory once it is up and connected, and stops it.
func (b *bench) edgeRun(ctx context.Context, r int, bin, cfgPath, listen, token, visitID string) error {
	logf, err := os.Create(filepath.Join(b.dir, fmt.Sprintf("svc-edge.%d.log", r)))
	if err != nil {
		return err
	}
	defer logf.Close()
	cl := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + listen

	cmd := exec.Command(bin, "run", "--config", cfgPath, "--simulate")
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	kill := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	fail := func(err error) error {
		kill()
		return fmt.Errorf("svc-edge run %d (log %s): %w", r, logf.Name(), err)
	}

	// The first decision: POST the pass until the server answers.
	var sr struct {
		Admitted bool   `json:"admitted"`
		Kind     string `json:"kind"`
		Reason   string `json:"reason"`
		VisitID  string `json:"visit_id"`
		Decision int64  `json:"decision_us"`
	}
	var first time.Duration
	attempts := 0
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("svc-edge exited before answering: %v (log %s)", err, logf.Name())
		default:
		}
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		attempts++
		resp, err := cl.Post(base+"/gates/"+b.gateID+"/scan", "text/plain", strings.NewReader(token))
		if err != nil {
			if time.Since(start) > time.Minute {
				return fail(err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		first = time.Since(start)
		if resp.StatusCode != http.StatusOK {
			return fail(fmt.Errorf("scan: %d %s", resp.StatusCode, body))
		}
		if err := json.Unmarshal(body, &sr); err != nil {
			return fail(err)
		}
		break
	}
	if !sr.Admitted || sr.Kind != string(protocol.FactCheckIn) || sr.VisitID != visitID {
		return fail(fmt.Errorf("first scan not a check-in of %s: %+v", visitID, sr))
	}
	// Up: healthy, connected to the broker and through a resync.
	var status struct {
		Cache  struct{ Visits int } `json:"cache"`
		Broker struct {
			Connected bool
			SyncedAt  time.Time
		} `json:"broker"`
	}
	err = waitFor(ctx, time.Minute, "svc-edge to be connected and synced", func() bool {
		resp, err := cl.Get(base + "/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && json.Unmarshal(raw, &status) == nil && status.Broker.Connected && !status.Broker.SyncedAt.IsZero()
	})
	if err != nil {
		return fail(err)
	}
	up := time.Since(start)
	time.Sleep(2 * time.Second) // settled
	m1, err := procMem(cmd.Process.Pid)
	if err != nil {
		return fail(err)
	}
	// A thousand more decisions (refused: the pass is used, so nothing
	// changes but the refusal each records) and the memory again. Each is
	// timed, request to answer, for what the edge's collector costs them.
	scans := make([]time.Duration, 0, 1000)
	for range 1000 {
		at := time.Now()
		resp, err := cl.Post(base+"/gates/"+b.gateID+"/scan", "text/plain", strings.NewReader(token))
		if err != nil {
			return fail(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		scans = append(scans, time.Since(at))
	}
	slices.Sort(scans)
	m2, err := procMem(cmd.Process.Pid)
	if err != nil {
		return fail(err)
	}
	if b.o.smaps {
		byMap, err := smapsRss(cmd.Process.Pid)
		if err != nil {
			return fail(err)
		}
		for _, m := range byMap {
			b.result("memory-smaps", "run", r+1, "mapping", m.name, "rss_kib", m.kib)
		}
	}
	kill()
	b.result("memory", "run", r+1, "cached_visits", status.Cache.Visits,
		"first_decision_after", first, "first_decision_attempts", attempts, "decision_us", sr.Decision,
		"connected_synced_after", up, "scan_p50_ms", fmt.Sprintf("%.2f", benchutil.MS(benchutil.Pct(scans, 50))),
		"scan_p99_ms", fmt.Sprintf("%.2f", benchutil.MS(benchutil.Pct(scans, 99))))
	for _, x := range []struct {
		when string
		m    mem
	}{{"up", m1}, {"after_1000_scans", m2}} {
		b.result("memory-rss", "run", r+1, "when", x.when, "vmrss_mib", fmt.Sprintf("%.1f", x.m.rss),
			"vmhwm_mib", fmt.Sprintf("%.1f", x.m.hwm), "rss_anon_mib", fmt.Sprintf("%.1f", x.m.anon),
			"rss_file_mib", fmt.Sprintf("%.1f", x.m.file))
	}
	return nil
}

// smapsRss sums a process's resident memory by mapping, in KiB, largest
// first: a file's mappings under its path, anonymous ones under their
// kind ([heap], [stack], or anon).
func smapsRss(pid int) ([]mapRss, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	sums := map[string]int{}
	name := ""
	for line := range bytes.Lines(raw) {
		f := strings.Fields(string(line))
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			name = "anon"
			if len(f) >= 6 {
				name = f[5]
			}
		case len(f) == 3 && f[0] == "Rss:":
			kb, _ := strconv.Atoi(f[1])
			sums[name] += kb
		}
	}
	out := make([]mapRss, 0, len(sums))
	for n, kb := range sums {
		if kb > 0 {
			out = append(out, mapRss{n, kb})
		}
	}
	slices.SortFunc(out, func(a, b mapRss) int { return cmp.Or(b.kib-a.kib, strings.Compare(a.name, b.name)) })
	return out, nil
}

type mapRss struct {
	name string
	kib  int
}

// procMem reads a process's memory from /proc/PID/status, in MiB: VmRSS
// and VmHWM, and VmRSS's anonymous and file-backed parts (bbolt maps the
// cache file, so pages of it that were read count as file-backed RSS).
type mem struct{ rss, hwm, anon, file float64 }

func procMem(pid int) (mem, error) {
	var m mem
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	for line := range bytes.Lines(raw) {
		f := strings.Fields(string(line))
		if len(f) < 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = kb / 1024
		case "VmHWM:":
			m.hwm = kb / 1024
		case "RssAnon:":
			m.anon = kb / 1024
		case "RssFile:":
			m.file = kb / 1024
		}
	}
	if m.rss == 0 || m.hwm == 0 {
		return m, fmt.Errorf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}
