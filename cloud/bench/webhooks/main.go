// Command webhooks is the load program of webhook delivery (issue 5): it
// runs the real svc-cloud parts in this process (a Store, a cloud.Service
// with httpapi's event renderer, webhook.Dispatcher with its default
// client) against a receiver on 127.0.0.1 over real TCP, and measures:
//
//   - throughput: with no dispatcher running, -n visits are created through
//     the Service (each writes visit.created and pass.sent, so 2n events,
//     each queued for the one endpoint, subscribed to "*"); then the
//     dispatcher(s) start and the drain is timed until the receiver has
//     every delivery. Once per -configs entry DxW (D dispatchers of W
//     workers, batch -batch), each on a fresh database. Prints
//     deliveries/s.
//   - delay: with the dispatcher's Run loop running (woken by the Service
//     when events commit), visits are created at each -rates rate for
//     -duration (after -warmup at that rate); for each delivery, receipt
//     time minus the event's created_at (from the envelope; the service
//     clock is time.Now). Prints p50, p90, p99 and max. On PostgreSQL it is
//     measured again with the dispatcher on a second Service and Store over
//     the same database ("another process"), which the first one's commits
//     do not wake: it relies on its 1 s poll.
//
// Every scenario checks that each event reached the receiver exactly once
// (each webhook-id once, and none other), that every -verify-every-th
// request verifies with the official Standard Webhooks library, and that
// no delivery is left pending or failed; it exits 1 if not.
//
// Stores: SQLite (a file in a temporary directory) always, PostgreSQL when
// -pg or SVC_TEST_POSTGRES_URL gives a URL (a fresh schema per database,
// dropped at the end); -stores narrows them. The machine's load
// (/proc/loadavg) is printed before and after each measurement.
//
// Lines starting RESULT are the figures; the rest is progress on stderr.
//
//	SVC_TEST_POSTGRES_URL=postgres://... go run ./cloud/bench/webhooks
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/bench/benchutil"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/webhook"
)

type options struct {
	stores      []string
	pgURL       string
	scenarios   []string
	n           int
	creators    int
	configs     []config
	batch       int
	rates       []float64
	duration    time.Duration
	warmup      time.Duration
	cross       bool
	verifyEvery int
	cpuProfile  string
	pgMaxConns  int
	traceSQL    bool
	timeout     time.Duration
	verbose     bool
}

// config is one throughput configuration: dispatchers of workers each.
type config struct{ dispatchers, workers int }

func (c config) String() string { return fmt.Sprintf("%dx%d", c.dispatchers, c.workers) }

func main() {
	var o options
	var stores, scenarios, configs, rates string
	flag.StringVar(&stores, "stores", "sqlite,postgres", "stores to measure; postgres only when -pg or SVC_TEST_POSTGRES_URL is set")
	flag.StringVar(&o.pgURL, "pg", os.Getenv("SVC_TEST_POSTGRES_URL"), "PostgreSQL URL (a fresh schema is made in it per database and dropped)")
	flag.StringVar(&scenarios, "scenarios", "throughput,delay", "throughput, delay")
	flag.IntVar(&o.n, "n", 5000, "throughput: visits created before the dispatchers start (2 events, so 2 deliveries, each)")
	flag.IntVar(&o.creators, "creators", 4, "throughput: goroutines creating the visits through the Service")
	flag.StringVar(&configs, "configs", "1x8,2x8,1x16", "throughput: DxW entries, D dispatchers of W workers each")
	flag.IntVar(&o.batch, "batch", 32, "throughput: each dispatcher's Batch")
	flag.StringVar(&rates, "rates", "20,100", "delay: visits created per second")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "delay: how long visits are created at each rate")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "delay: unmeasured creation at the same rate first")
	flag.BoolVar(&o.cross, "cross", true, "delay, PostgreSQL: measure too with the dispatcher in a second Service and Store (another process)")
	flag.IntVar(&o.verifyEvery, "verify-every", 10, "the receiver verifies every this many requests with the Standard Webhooks library (1: all)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "throughput: write a CPU profile of each drain to this path with -STORE-DxW.pprof appended")
	flag.IntVar(&o.pgMaxConns, "pg-max-conns", 0, "PostgreSQL pool size (0: pgxpool's default, as svc-cloud runs)")
	flag.BoolVar(&o.traceSQL, "trace-sql", false, "PostgreSQL, throughput: count and time each statement the store runs during the drain")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.BoolVar(&o.verbose, "v", false, "log the dispatcher's warnings")
	flag.Parse()
	o.stores = split(stores)
	o.scenarios = split(scenarios)
	bad := flag.NArg() > 0 || o.n < 1 || o.creators < 1 || o.batch < 1 || o.verifyEvery < 1 || o.duration <= 0
	for _, c := range split(configs) {
		var cf config
		if _, err := fmt.Sscanf(c, "%dx%d", &cf.dispatchers, &cf.workers); err != nil || cf.dispatchers < 1 || cf.workers < 1 {
			bad = true
		}
		o.configs = append(o.configs, cf)
	}
	for _, r := range split(rates) {
		f, err := strconv.ParseFloat(r, 64)
		if err != nil || f <= 0 {
			bad = true
		}
		o.rates = append(o.rates, f)
	}
	if bad {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	err := run(ctx, o)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks: FAILED:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

type bench struct {
	o   options
	dir string
	log *slog.Logger
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "bench-webhooks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	level := slog.LevelError + 1
	if o.verbose {
		level = slog.LevelWarn
	}
	b := &bench{o: o, dir: dir, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	fmt.Printf("RESULT machine cpus=%d loadavg=%q\n", runtime.NumCPU(), benchutil.LoadAvg())
	for _, st := range o.stores {
		switch st {
		case "sqlite":
		case "postgres":
			if o.pgURL == "" {
				progress("postgres: skipped (set SVC_TEST_POSTGRES_URL or -pg)")
				continue
			}
		default:
			return fmt.Errorf("-stores: %q is not sqlite or postgres", st)
		}
		for _, sc := range o.scenarios {
			switch sc {
			case "throughput":
				for _, c := range o.configs {
					if err := b.throughput(ctx, st, c); err != nil {
						return fmt.Errorf("%s throughput %s: %w", st, c, err)
					}
				}
			case "delay":
				if err := b.delay(ctx, st); err != nil {
					return fmt.Errorf("%s delay: %w", st, err)
				}
			default:
				return fmt.Errorf("-scenarios: %q is not throughput or delay", sc)
			}
		}
	}
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// result prints one figure line on stdout.
func result(kv ...any) {
	var sb strings.Builder
	sb.WriteString("RESULT")
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case time.Duration:
			v = fmt.Sprintf("%.1fms", benchutil.MS(x))
		case float64:
			v = strconv.FormatFloat(x, 'f', 1, 64)
		case string:
			if strings.ContainsAny(x, " \"") {
				v = strconv.Quote(x)
			}
		}
		fmt.Fprintf(&sb, " %s=%v", kv[i], v)
	}
	fmt.Println(sb.String())
}

// ---- the database, service and endpoint ----

// env is one fresh database with a seeded organisation and one endpoint
// subscribed to "*" that points at rcv.
type env struct {
	kind     string
	store    *timedStore
	svc      *cloud.Service
	actor    cloud.Actor
	siteID   string
	hostID   string
	endpoint cloud.WebhookEndpoint
	rcv      *receiver
	since    time.Time // the endpoint's creation: events from then on are delivered
	sqlPath  string
	pgSchema string
	tracer   *benchutil.SQLTracer // -trace-sql
	closers  []func()
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// open opens a fresh database of kind, seeds it, starts a receiver and
// subscribes an endpoint to it.
func (b *bench) open(ctx context.Context, kind string) (_ *env, err error) {
	e := &env{kind: kind}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	var st cloud.Store
	switch kind {
	case "sqlite":
		f, err := os.CreateTemp(b.dir, "cloud-*.db")
		if err != nil {
			return nil, err
		}
		f.Close()
		os.Remove(f.Name())
		e.sqlPath = f.Name()
		s, err := sqlite.Open(ctx, e.sqlPath, kektest.Ring())
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() {
			s.Close()
			for _, suf := range []string{"", "-wal", "-shm"} {
				os.Remove(e.sqlPath + suf)
			}
		})
		st = s
	case "postgres":
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		schema := "bench_webhooks_" + hex.EncodeToString(rnd[:])
		if err := pgExec(ctx, b.o.pgURL, "CREATE SCHEMA "+schema); err != nil {
			return nil, fmt.Errorf("create schema: %w", err)
		}
		e.pgSchema = schema
		e.closers = append(e.closers, func() {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := pgExec(dctx, b.o.pgURL, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
				progress("drop schema %s: %v (drop it by hand)", schema, err)
			}
		})
		if b.o.traceSQL {
			e.tracer = &benchutil.SQLTracer{}
		}
		s, err := b.openPG(ctx, schema, e.tracer)
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() { s.Close() })
		st = s
	}
	e.store = &timedStore{Store: st}
	e.svc = b.service(e.store)
	res, err := e.svc.Seed(ctx, "Webhooks bench", cloud.PlanEnterprise)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	p, err := e.svc.Authenticate(ctx, res.Keys.SecretTest)
	if err != nil {
		return nil, err
	}
	e.actor = cloud.ActorOf(p)
	e.siteID, e.hostID = res.Test.Sites[0].ID, res.Test.People[0]
	if e.rcv, err = newReceiver(b.o.verifyEvery); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, e.rcv.close)
	url, desc := e.rcv.url+"/hooks", "bench receiver"
	e.endpoint, err = e.svc.CreateWebhookEndpoint(ctx, e.actor, cloud.WebhookInput{URL: &url, Description: &desc, EventTypes: []string{"*"}})
	if err != nil {
		return nil, fmt.Errorf("create endpoint: %w", err)
	}
	e.since = e.endpoint.CreatedAt
	if err := e.rcv.trust(e.endpoint.Secret); err != nil {
		return nil, err
	}
	return e, nil
}

// service is a Service over st as svc-cloud makes it: the real clock,
// httpapi's renderer, and test-mode endpoints allowed on loopback.
func (b *bench) service(st cloud.Store) *cloud.Service {
	svc := cloud.NewService(st, time.Now)
	svc.SetEventRenderer(httpapi.RenderEvent)
	svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true})
	return svc
}

func (b *bench) openPG(ctx context.Context, schema string, tracer *benchutil.SQLTracer) (*postgres.Store, error) {
	cfg, err := pgxpool.ParseConfig(b.o.pgURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if b.o.pgMaxConns > 0 {
		cfg.MaxConns = int32(b.o.pgMaxConns)
	}
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	return postgres.OpenConfig(ctx, cfg, kektest.Ring())
}

func pgExec(ctx context.Context, url, q string) error { return pgExecIn(ctx, url, "", q) }

// pgExecIn runs q on a connection of its own whose search_path is schema
// (unless "").
func pgExecIn(ctx context.Context, url, schema, q string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	if schema != "" {
		cfg.RuntimeParams["search_path"] = schema
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

// dispatcher is the dispatcher svc-cloud runs, over svc.
func (b *bench) dispatcher(svc *cloud.Service, batch, workers int) *webhook.Dispatcher {
	return &webhook.Dispatcher{Service: svc, Body: httpapi.EventBody, Log: b.log, Batch: batch, Workers: workers}
}

// createVisit creates one visit through the Service, its pass sent by
// email: visit.created and pass.sent.
func (e *env) createVisit(ctx context.Context, svc *cloud.Service, name string) (cloud.Visit, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	from := time.Now().UTC().Truncate(time.Second)
	until := from.Add(8 * time.Hour)
	return svc.CreateVisit(ctx, e.actor, cloud.VisitInput{
		SiteID: cloud.Some(e.siteID), HostID: cloud.Some(e.hostID), Type: cloud.Some("meeting"),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some(name),
			Email: cloud.Some(fmt.Sprintf("load.%s@example.org", hex.EncodeToString(rnd[:])))}),
		ExpectedAt: cloud.Some(&from), ExpectedUntil: cloud.Some(&until),
	})
}

// events returns the IDs of every event since the endpoint was made.
func (e *env) events(ctx context.Context) (map[string]cloud.Event, error) {
	out := map[string]cloud.Event{}
	p := cloud.Page{Limit: 100}
	for {
		evs, more, err := e.store.ListEvents(ctx, e.actor.Tenant, cloud.EventFilter{CreatedGTE: &e.since}, p)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			out[ev.ID] = ev
		}
		if !more || len(evs) == 0 {
			return out, nil
		}
		last := evs[len(evs)-1]
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// check waits until the receiver holds every event since the endpoint
// was made, then checks each came exactly once, none other came, the
// sampled signatures verified, and no delivery is pending or failed.
func (e *env) check(ctx context.Context, settle time.Duration) (map[string]cloud.Event, error) {
	evs, err := e.events(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.waitReceived(ctx, "every delivery", func() bool { return e.rcv.distinct() >= len(evs) }); err != nil {
		return nil, fmt.Errorf("%d of %d events reached the receiver: %w", e.rcv.distinct(), len(evs), err)
	}
	time.Sleep(settle) // a duplicate would come now
	got, invalid, verified := e.rcv.snapshot()
	if len(invalid) > 0 {
		return nil, fmt.Errorf("%d requests failed verification with the Standard Webhooks library, first: %s", len(invalid), invalid[0])
	}
	if verified == 0 {
		return nil, errors.New("no request was verified")
	}
	var dup, unknown []string
	for id, r := range got {
		if _, ok := evs[id]; !ok {
			unknown = append(unknown, id)
		}
		if r.n != 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", id, r.n))
		}
	}
	if len(dup) > 0 || len(unknown) > 0 || len(got) != len(evs) {
		return nil, fmt.Errorf("NOT EXACTLY ONCE: %d events, %d webhook-ids received, %d duplicated (%v), %d unknown (%v)",
			len(evs), len(got), len(dup), first(dup), len(unknown), first(unknown))
	}
	for _, s := range []cloud.DeliveryStatus{cloud.DeliveryPending, cloud.DeliveryFailed} {
		ds, _, err := e.svc.WebhookDeliveries(ctx, e.actor, e.endpoint.ID, cloud.DeliveryFilter{Status: s}, cloud.Page{Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(ds) > 0 {
			return nil, fmt.Errorf("delivery of %s is %s after the receiver got it", ds[0].EventID, s)
		}
	}
	return evs, nil
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// stall is how long the receiver may get nothing before a wait fails.
const stall = time.Minute

// waitReceived waits until done, failing when the receiver gets nothing
// for a minute: it then says where the deliveries stand and dumps the
// goroutines on stderr.
func (e *env) waitReceived(ctx context.Context, what string, done func() bool) error {
	last, lastAt := e.rcv.total.Load(), time.Now()
	for !done() {
		if n := e.rcv.total.Load(); n != last {
			last, lastAt = n, time.Now()
		}
		if time.Since(lastAt) > stall {
			e.diagnose(ctx)
			return fmt.Errorf("%s: STALLED, the receiver got nothing for %v (%d requests in all)", what, stall, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// diagnose prints the pending deliveries, the latest attempts and the
// goroutines.
func (e *env) diagnose(ctx context.Context) {
	ds, more, err := e.svc.WebhookDeliveries(ctx, e.actor, e.endpoint.ID, cloud.DeliveryFilter{Status: cloud.DeliveryPending}, cloud.Page{Limit: 5})
	progress("diagnosis: pending deliveries (newest 5, more=%v, err=%v):", more, err)
	for _, d := range ds {
		progress("  %s attempts=%d next=%v last_status=%d", d.EventID, d.Attempts, d.NextAttemptAt, d.LastStatusCode)
	}
	as, _, err := e.svc.WebhookAttempts(ctx, e.actor, e.endpoint.ID, cloud.AttemptFilter{}, cloud.Page{Limit: 5})
	progress("diagnosis: latest attempts (err=%v):", err)
	for _, a := range as {
		progress("  %s at=%s status=%d error=%q", a.EventID, a.AttemptedAt.Format(time.RFC3339Nano), a.StatusCode, a.Error)
	}
	_, invalid, _ := e.rcv.snapshot()
	progress("diagnosis: receiver: %d requests, %d webhook-ids, %d invalid %v", e.rcv.total.Load(), e.rcv.distinct(), len(invalid), first(invalid))
	_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
}

// ---- throughput ----

func (b *bench) throughput(ctx context.Context, kind string, c config) error {
	e, err := b.open(ctx, kind)
	if err != nil {
		return err
	}
	defer e.close()

	progress("%s %s: creating %d visits with no dispatcher running", kind, c, b.o.n)
	var next atomic.Int64
	errs := make(chan error, b.o.creators)
	var wg sync.WaitGroup
	start := time.Now()
	for range b.o.creators {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.o.n) || ctx.Err() != nil {
					return
				}
				if _, err := e.createVisit(ctx, e.svc, fmt.Sprintf("Queued Visitor %d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	made := time.Since(start)
	evs, err := e.events(ctx)
	if err != nil {
		return err
	}
	if e.rcv.total.Load() != 0 {
		return errors.New("the receiver got requests before any dispatcher ran")
	}
	want := len(evs)
	progress("%s %s: %d visits, %d events queued in %.1f s (%.0f visits/s); starting %d dispatcher(s) of %d workers, batch %d",
		kind, c, b.o.n, want, made.Seconds(), float64(b.o.n)/made.Seconds(), c.dispatchers, c.workers, b.o.batch)
	if kind == "postgres" {
		// As autovacuum would (it may be off): the claim's plan should
		// know the queue holds rows.
		if err := pgExecIn(ctx, b.o.pgURL, e.pgSchema, "ANALYZE"); err != nil {
			return err
		}
	}

	load0 := benchutil.LoadAvg()
	if b.o.cpuProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s-%s-%s.pprof", b.o.cpuProfile, kind, c))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	e.store.reset()
	if e.tracer != nil {
		e.tracer.On(true)
	}
	dctx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	start = time.Now()
	for range c.dispatchers {
		d := b.dispatcher(e.svc, b.o.batch, c.workers)
		running.Go(func() { _ = d.Run(dctx) })
	}
	err = e.waitReceived(ctx, "the drain", func() bool { return e.rcv.total.Load() >= int64(want) })
	took := e.rcv.lastAt().Sub(start)
	if b.o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if e.tracer != nil {
		e.tracer.On(false)
	}
	load1 := benchutil.LoadAvg()
	if err != nil {
		stop()
		running.Wait()
		return err
	}
	if _, err := e.check(ctx, time.Second); err != nil {
		stop()
		running.Wait()
		return err
	}
	stop()
	running.Wait()
	claims, claimT, completes, completeT := e.store.stats()
	result("scenario", "throughput", "store", kind, "dispatchers", c.dispatchers, "workers", c.workers, "batch", b.o.batch,
		"deliveries", want, "seconds", strconv.FormatFloat(took.Seconds(), 'f', 2, 64),
		"deliveries_per_s", float64(want)/took.Seconds(), "exactly_once", "ok",
		"claims", claims, "claim_avg", avg(claimT, claims), "complete_avg", avg(completeT, completes),
		"receiver_conns", e.rcv.conns.Load(), "verified", e.rcv.verified.Load(),
		"visits_per_s_created", float64(b.o.n)/made.Seconds(), "load_before", load0, "load_after", load1)
	if e.tracer != nil {
		e.tracer.Report(os.Stdout, "delivery", want)
	}
	return nil
}

func avg(d time.Duration, n int64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// ---- delay ----

func (b *bench) delay(ctx context.Context, kind string) error {
	e, err := b.open(ctx, kind)
	if err != nil {
		return err
	}
	defer e.close()

	// In-process: the Service that commits the events wakes the
	// dispatcher.
	dctx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	d := b.dispatcher(e.svc, 0, 0)
	running.Go(func() { _ = d.Run(dctx) })
	for _, rate := range b.o.rates {
		if err := b.delayAt(ctx, e, rate, "same"); err != nil {
			stop()
			running.Wait()
			return err
		}
	}
	stop()
	running.Wait()

	if kind != "postgres" || !b.o.cross {
		return nil
	}
	// Another process: a second Store and Service over the same schema,
	// whose dispatcher nothing wakes; events come from the first.
	st2, err := b.openPG(ctx, e.pgSchema, nil)
	if err != nil {
		return err
	}
	defer st2.Close()
	svc2 := b.service(st2)
	dctx, stop = context.WithCancel(ctx)
	d2 := b.dispatcher(svc2, 0, 0)
	running.Go(func() { _ = d2.Run(dctx) })
	defer func() {
		stop()
		running.Wait()
	}()
	for _, rate := range b.o.rates {
		if err := b.delayAt(ctx, e, rate, "other"); err != nil {
			return err
		}
	}
	return nil
}

// delayAt creates visits at rate through e's Service, each on its own
// goroutine at its slot, and reports the delay from each event's
// created_at to the receipt of its delivery.
func (b *bench) delayAt(ctx context.Context, e *env, rate float64, process string) error {
	interval := time.Duration(float64(time.Second) / rate)
	create := func(d time.Duration, name string) ([]string, time.Duration, error) {
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
				v, err := e.createVisit(ctx, e.svc, fmt.Sprintf("%s %d", name, i))
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
		if _, _, err := create(b.o.warmup, "Warm-up Visitor"); err != nil {
			return err
		}
	}
	progress("%s delay (dispatcher in the %s process): creating visits at %.0f/s for %v", e.kind, process, rate, b.o.duration)
	load0 := benchutil.LoadAvg()
	made, took, err := create(b.o.duration, "Steady Visitor")
	if err != nil {
		return err
	}
	evs, err := e.check(ctx, time.Second)
	load1 := benchutil.LoadAvg()
	if err != nil {
		return err
	}
	measured := map[string]bool{}
	for _, id := range made {
		measured[id] = true
	}
	got, _, _ := e.rcv.snapshot()
	var ds []time.Duration
	for id, ev := range evs {
		if !measured[ev.ObjectID] {
			continue
		}
		r := got[id]
		ds = append(ds, r.first.Sub(r.created))
	}
	if len(ds) != 2*len(made) {
		return fmt.Errorf("%d deliveries of the %d measured visits; want 2 each", len(ds), len(made))
	}
	slices.Sort(ds)
	result("scenario", "delay", "store", e.kind, "dispatcher", process, "rate", rate,
		"visits_per_s_achieved", float64(len(made))/took.Seconds(), "deliveries", len(ds), "exactly_once", "ok",
		"p50", benchutil.Pct(ds, 50), "p90", benchutil.Pct(ds, 90), "p99", benchutil.Pct(ds, 99), "max", ds[len(ds)-1], "min", ds[0],
		"load_before", load0, "load_after", load1)
	return nil
}

// ---- the store, timed ----

// timedStore is the real store, timing the dispatcher's two calls.
type timedStore struct {
	cloud.Store
	claims, claimNs, completes, completeNs atomic.Int64
}

func (s *timedStore) ClaimWebhookDeliveries(ctx context.Context, now, until time.Time, claim string, limit int) ([]cloud.WebhookJob, error) {
	t := time.Now()
	jobs, err := s.Store.ClaimWebhookDeliveries(ctx, now, until, claim, limit)
	s.claims.Add(1)
	s.claimNs.Add(int64(time.Since(t)))
	return jobs, err
}

func (s *timedStore) CompleteWebhookDelivery(ctx context.Context, claim string, a *cloud.WebhookAttempt, fn func(*cloud.WebhookDelivery, *cloud.WebhookEndpoint) error) error {
	t := time.Now()
	err := s.Store.CompleteWebhookDelivery(ctx, claim, a, fn)
	s.completes.Add(1)
	s.completeNs.Add(int64(time.Since(t)))
	return err
}

func (s *timedStore) reset() {
	s.claims.Store(0)
	s.claimNs.Store(0)
	s.completes.Store(0)
	s.completeNs.Store(0)
}

func (s *timedStore) stats() (claims int64, claimT time.Duration, completes int64, completeT time.Duration) {
	return s.claims.Load(), time.Duration(s.claimNs.Load()), s.completes.Load(), time.Duration(s.completeNs.Load())
}

// ---- the receiver ----

// receiver is a webhook receiver on 127.0.0.1: it answers 200 at once,
// verifies every verifyEvery-th request with the official Standard
// Webhooks library, and notes each webhook-id's requests, its first
// receipt and its event's created_at.
type receiver struct {
	srv         *http.Server
	url         string
	verifyEvery int64
	wh          atomic.Pointer[standardwebhooks.Webhook]

	total, verified, conns atomic.Int64

	mu      sync.Mutex
	got     map[string]*receipt
	invalid []string
	last    time.Time
}

type receipt struct {
	n       int
	first   time.Time
	created time.Time
}

func newReceiver(verifyEvery int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), verifyEvery: int64(verifyEvery), got: map[string]*receipt{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				r.conns.Add(1)
			}
		}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() { _ = r.srv.Close() }

func (r *receiver) trust(secret string) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	r.wh.Store(wh)
	return nil
}

// envelope is what the receiver reads of a delivery's body.
type envelope struct {
	ID        string `json:"id"`
	CreatedAt string `json:"created_at"`
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	n := r.total.Add(1)
	body, err := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	var env envelope
	var problem string
	switch {
	case err != nil:
		problem = "read body: " + err.Error()
	case json.Unmarshal(body, &env) != nil:
		problem = "body is not JSON"
	case env.ID != id:
		problem = fmt.Sprintf("body's id %q is not the webhook-id", env.ID)
	}
	created, err := time.Parse(time.RFC3339Nano, env.CreatedAt)
	if problem == "" && err != nil {
		problem = "created_at: " + err.Error()
	}
	if problem == "" && n%r.verifyEvery == 0 {
		if err := r.wh.Load().Verify(body, req.Header); err != nil {
			problem = "signature: " + err.Error()
		} else {
			r.verified.Add(1)
		}
	}
	r.mu.Lock()
	if problem != "" {
		r.invalid = append(r.invalid, id+": "+problem)
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	g := r.got[id]
	if g == nil {
		g = &receipt{first: at, created: created}
		r.got[id] = g
	}
	g.n++
	if at.After(r.last) {
		r.last = at
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) lastAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// snapshot copies what came.
func (r *receiver) snapshot() (map[string]receipt, []string, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]receipt, len(r.got))
	for id, g := range r.got {
		out[id] = *g
	}
	return out, slices.Clone(r.invalid), r.verified.Load()
}

// ---- -trace-sql ----
