package sitetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/mqttsync/mqtttest"
	"github.com/svc-vms/svc/sync/protocol"
)

// wait bounds the harness's own waits: a half connecting or stopping.
const wait = 20 * time.Second

// RecheckEvery is how often the harness's embedded broker looks for
// revoked edges to disconnect: short, so a test sees it happen.
const RecheckEvery = 100 * time.Millisecond

// closer is a cloud store a process opens and closes.
type closer interface {
	cloud.Store
	Close() error
}

// World is one test's cloud side: its store, the cloud processes on it,
// the broker, and an organisation of its own with two sites. Edges serve
// Site; Other is a second site of the organisation, for what belongs
// elsewhere.
type World struct {
	Opts   Options
	Tenant cloud.Tenant // test mode
	Actor  cloud.Actor  // a secret key of the tenant, on the pro plan
	Site   protocol.Site
	Entry  string // Site's entry gate
	Exit   string // Site's exit gate

	Other     protocol.Site
	OtherGate string // Other's gate (both ways)

	t          testing.TB
	open       func() (closer, error)
	brokerURL  string          // for clients that connect without a proxy
	cloudProxy *mqtttest.Proxy // the cloud halves' way to the broker
	// startBroker starts the embedded broker on addr and returns its
	// address; stopBroker stops it.
	startBroker func(addr string) string
	stopBroker  func()
	cloudUser   string
	cloudPass   string
	facts       *factReader

	mu      sync.Mutex
	primary *Process
	edges   []*Edge
}

// Start makes a World: it opens the store, starts the broker when it is
// the embedded one, creates the organisation, its sites, gates and
// pass-signing key, and starts a cloud process with its cloud half. All of
// it stops when t ends.
func Start(t testing.TB, opts Options) *World {
	t.Helper()
	w := &World{Opts: opts, t: t}
	switch opts.Store {
	case SQLite:
		path := filepath.Join(t.TempDir(), "cloud.db")
		w.open = func() (closer, error) { return sqlite.Open(context.Background(), path, kektest.Ring()) }
		w.facts = newSQLiteFacts(t, path)
	case Postgres:
		url := postgrestest.URL(t)
		schema := postgrestest.NewSchema(t, url)
		w.open = func() (closer, error) { return postgrestest.OpenIn(t, url, schema) }
		w.facts = newPostgresFacts(t, url, schema)
	default:
		t.Fatalf("sitetest: unknown store %q", opts.Store)
	}
	w.primary = w.newProcess(t)
	ctx := context.Background()
	svc := w.primary.Service

	switch opts.Broker {
	case Embedded:
		pass, err := edgesync.CloudPassword(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		// svc-cloud's authenticator, over whichever service is current:
		// the cloud may be restarted under the broker.
		auth := broker.AuthenticatorFunc(func(ctx context.Context, user, password string) (broker.Access, error) {
			return edgesync.Authenticator(w.Svc(), pass).Authenticate(ctx, user, password)
		})
		w.startBroker = func(addr string) string {
			revoked := func(ctx context.Context, ids []string) ([]string, error) { return w.Svc().RevokedEdges(ctx, ids) }
			b, err := broker.New(broker.Config{Listen: addr, Auth: auth, Revoked: revoked, RecheckEvery: RecheckEvery,
				Logger: Logger(t, "broker")})
			must(t, err)
			w.stopBroker = runPart(t, "broker", b.Run)
			return b.Addr()
		}
		w.brokerURL, w.cloudUser, w.cloudPass = "tcp://"+w.startBroker("127.0.0.1:0"), edgesync.CloudUsername, pass
	case Mosquitto:
		w.brokerURL = mosquittoURL(t)
	default:
		t.Fatalf("sitetest: unknown broker %q", opts.Broker)
	}

	// The cloud halves reach the broker through a proxy of their own, so a
	// test can cut them off a broker it cannot stop.
	w.cloudProxy = mqtttest.NewProxy(t, w.brokerURL)
	w.setUp(t)
	w.primary.StartHalf()
	return w
}

// BrokerDown takes the broker away from everyone: the embedded broker
// stops (its sessions and queued messages are lost, as in a restart);
// Mosquitto, which the test cannot stop, is cut off from the cloud halves
// and every edge by their proxies. BrokerUp brings it back: a new embedded
// broker on the same address, or the proxies open again.
func (w *World) BrokerDown() {
	w.t.Helper()
	if w.Opts.Broker == Embedded {
		w.stopBroker()
		return
	}
	w.cloudProxy.Cut()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.edges {
		e.Proxy.Cut()
	}
}

// BrokerUp ends BrokerDown.
func (w *World) BrokerUp() {
	w.t.Helper()
	if w.Opts.Broker == Embedded {
		w.startBroker(strings.TrimPrefix(w.brokerURL, "tcp://"))
		return
	}
	w.cloudProxy.Restore()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.edges {
		e.Proxy.Restore()
	}
}

// setUp creates the organisation, its sites and gates, and its
// pass-signing key (made by the first pass the cloud signs: one for a
// visit at Other), so edges receive the key with their first sync.
func (w *World) setUp(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	svc := w.Svc()
	org, err := svc.CreateOrganisation(ctx, "Sitetest", cloud.PlanPro)
	must(t, err)
	w.Tenant = cloud.Tenant{OrgID: org.ID, Mode: cloud.ModeTest}
	w.Actor = cloud.Actor{Tenant: w.Tenant, KeyID: ids.New(ids.Key), Plan: cloud.PlanPro}
	site, err := svc.CreateSite(ctx, w.Tenant, cloud.SiteInput{Name: cloud.Some("HQ"), Timezone: cloud.Some("Europe/London")})
	must(t, err)
	w.Site = cloud.EdgeSite(w.Tenant, site.ID)
	for _, g := range []struct {
		dst  *string
		name string
		dir  cloud.Direction
	}{{&w.Entry, "Turnstile in", cloud.DirectionEntry}, {&w.Exit, "Turnstile out", cloud.DirectionExit}} {
		gate, err := svc.CreateGate(ctx, w.Tenant, cloud.GateInput{SiteID: cloud.Some(site.ID), Name: cloud.Some(g.name), Direction: cloud.Some(g.dir)})
		must(t, err)
		*g.dst = gate.ID
	}
	other, err := svc.CreateSite(ctx, w.Tenant, cloud.SiteInput{Name: cloud.Some("Annex"), Timezone: cloud.Some("Europe/Paris")})
	must(t, err)
	w.Other = cloud.EdgeSite(w.Tenant, other.ID)
	gate, err := svc.CreateGate(ctx, w.Tenant, cloud.GateInput{SiteID: cloud.Some(other.ID), Name: cloud.Some("Door"), Direction: cloud.Some(cloud.DirectionBoth)})
	must(t, err)
	w.OtherGate = gate.ID
	w.Token(t, w.NewVisitAt(t, w.Other).ID)
}

// Process is one cloud process: a store of its own (a pool on the same
// PostgreSQL schema, or the SQLite file), a cloud.Service on it and,
// while started, the cloud half of the sync.
type Process struct {
	Service *cloud.Service

	w     *World
	t     testing.TB
	store closer

	mu     sync.Mutex
	half   *mqttsync.Cloud
	stop   func()
	closed bool
}

func (w *World) newProcess(t testing.TB) *Process {
	t.Helper()
	s, err := w.open()
	if err != nil {
		t.Fatalf("open the %s store: %v", w.Opts.Store, err)
	}
	svc := cloud.NewService(s, time.Now)
	if err := svc.LoadSecrets(context.Background()); err != nil {
		_ = s.Close()
		t.Fatal(err)
	}
	p := &Process{Service: svc, w: w, t: t, store: s}
	t.Cleanup(p.Close)
	return p
}

// StartHalf starts the process's cloud half (a new one, with a new client
// ID, as a restarted process would) and waits until it is connected and
// subscribed.
func (p *Process) StartHalf() *mqttsync.Cloud {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.half != nil {
		p.t.Fatal("sitetest: StartHalf on a closed process or one with a half running")
	}
	c, err := mqttsync.NewCloud(p.w.cloudConfig(p.Service))
	if err != nil {
		p.t.Fatal(err)
	}
	p.Service.OnChange(c.Notify)
	p.half, p.stop = c, runPart(p.t, "cloud half", c.Run)
	Eventually(p.t, wait, func() bool { return c.State().Connected }, "the cloud half did not connect to %s", p.w.brokerURL)
	return c
}

// Half is the running cloud half, nil while stopped.
func (p *Process) Half() *mqttsync.Cloud {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.half
}

// StopHalf stops the cloud half, if it runs; the service and store stay.
func (p *Process) StopHalf() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.half != nil {
		p.stop()
		p.half, p.stop = nil, nil
	}
}

// Close stops the half and closes the store, as a process exiting.
func (p *Process) Close() {
	p.StopHalf()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		if err := p.store.Close(); err != nil {
			p.t.Errorf("close the %s store: %v", p.w.Opts.Store, err)
		}
	}
}

// cloudConfig is a cloud half's configuration with the test timings: the
// feed polled every 20 ms, reconnections within 200 ms.
func (w *World) cloudConfig(svc *cloud.Service) mqttsync.CloudConfig {
	cfg := mqttsync.CloudConfig{
		BrokerURL: w.cloudProxy.URL(), Username: w.cloudUser, Password: w.cloudPass,
		ClientID: "sitetest-cloud-" + randomHex(6),
		Store:    edgesync.Store{Service: svc}, Logger: Logger(w.t, "cloud"),
		PollEvery: 20 * time.Millisecond, KeepAlive: 10 * time.Second, ConnectTimeout: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}
	if w.Opts.Broker == Mosquitto {
		// Only this World's organisation: a shared Mosquitto carries other
		// tests' sites, whose facts this half must not take.
		narrow := "/" + string(w.Tenant.Mode) + "/" + w.Tenant.OrgID + "/sites/"
		for _, f := range []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus} {
			cfg.Filters = append(cfg.Filters, strings.Replace(f, "/+/+/sites/", narrow, 1))
		}
	}
	if w.Opts.Cloud != nil {
		w.Opts.Cloud(&cfg)
	}
	return cfg
}

// Cloud is the primary cloud process: the one Start began and
// RestartCloud replaces.
func (w *World) Cloud() *Process {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.primary
}

// Svc is the primary process's service.
func (w *World) Svc() *cloud.Service { return w.Cloud().Service }

// StopCloud stops the primary process's cloud half; the service goes on
// (the API still takes changes), nothing reads the broker for it.
func (w *World) StopCloud() { w.Cloud().StopHalf() }

// StartCloud starts a new cloud half in the primary process.
func (w *World) StartCloud() *mqttsync.Cloud { return w.Cloud().StartHalf() }

// RestartCloud ends the primary process (its half stops, its store
// closes) and starts a new one on the same database: a new store, a new
// service, a new half.
func (w *World) RestartCloud() *Process {
	w.t.Helper()
	w.Cloud().Close()
	p := w.newProcess(w.t)
	w.mu.Lock()
	w.primary = p
	w.mu.Unlock()
	p.StartHalf()
	return p
}

// AddProcess starts another cloud process on the same database, with its
// own pool, service and half, sharing the inbound topics with the others.
// Only PostgreSQL is shared by processes; on SQLite it fails t.
func (w *World) AddProcess(t testing.TB) *Process {
	t.Helper()
	if w.Opts.Store != Postgres {
		t.Fatal("sitetest: cloud processes share a PostgreSQL database only")
	}
	p := w.newProcess(t)
	p.StartHalf()
	return p
}

// RawClient connects a plain MQTT client with the cloud's rights (on
// Mosquitto, anonymously), for publishing what the halves never would.
func (w *World) RawClient(t testing.TB) paho.Client {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker(w.brokerURL).SetClientID("sitetest-raw-" + randomHex(6)).
		SetUsername(w.cloudUser).SetPassword(w.cloudPass).SetProtocolVersion(4).SetCleanSession(true).
		SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		t.Fatal("raw client: no answer to connect")
	}
	must(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

// Publish publishes payload at QoS 1 and waits for the broker to take it.
func Publish(t testing.TB, c paho.Client, topic string, retained bool, payload []byte) {
	t.Helper()
	tok := c.Publish(topic, 1, retained, payload)
	if !tok.WaitTimeout(10 * time.Second) {
		t.Fatalf("publish to %s: no acknowledgement", topic)
	}
	must(t, tok.Error())
}

// NewVisit creates a visit at Site through the service: expected from ten
// minutes ago for two hours, so its pass admits now.
func (w *World) NewVisit(t testing.TB) cloud.Visit {
	t.Helper()
	return w.NewVisitAt(t, w.Site)
}

// NewVisitAt creates a visit at one of the organisation's sites, as
// NewVisit does.
func (w *World) NewVisitAt(t testing.TB, site protocol.Site) cloud.Visit {
	t.Helper()
	return w.newVisit(t, w.Svc(), site)
}

// NewVisit creates a visit at Site through this process's service, as
// World.NewVisit does.
func (p *Process) NewVisit(t testing.TB) cloud.Visit {
	t.Helper()
	return p.w.newVisit(t, p.Service, p.w.Site)
}

func (w *World) newVisit(t testing.TB, svc *cloud.Service, site protocol.Site) cloud.Visit {
	t.Helper()
	v, err := w.createVisit(svc, site)
	must(t, err)
	return v
}

func (w *World) createVisit(svc *cloud.Service, site protocol.Site) (cloud.Visit, error) {
	now := time.Now().UTC()
	at, until := now.Add(-10*time.Minute), now.Add(2*time.Hour)
	return svc.CreateVisit(context.Background(), w.Actor, cloud.VisitInput{
		SiteID: cloud.Some(site.SiteID), Type: cloud.Some("meeting"), ExpectedAt: cloud.Some(&at), ExpectedUntil: cloud.Some(&until),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Vera Visitor")}),
	})
}

// NewVisits creates n visits as NewVisit does, a few at a time (their
// order is not kept).
func (w *World) NewVisits(t testing.TB, n int) []cloud.Visit {
	t.Helper()
	out := make([]cloud.Visit, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		out[i], errs[i] = w.createVisit(w.Svc(), w.Site)
	})
	must(t, errors.Join(errs...))
	return out
}

// Tokens are the visits' pass tokens, in order.
func (w *World) Tokens(t testing.TB, visits []cloud.Visit) []string {
	t.Helper()
	out := make([]string, len(visits))
	errs := make([]error, len(visits))
	parallel(len(visits), func(i int) {
		out[i], errs[i] = w.Svc().PassToken(context.Background(), w.Actor, visits[i].ID)
	})
	must(t, errors.Join(errs...))
	return out
}

// parallel calls fn(0) to fn(n-1) on four goroutines.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// Token is the pass token of a visit, as its QR code holds it.
func (w *World) Token(t testing.TB, visitID string) string {
	t.Helper()
	tok, err := w.Svc().PassToken(context.Background(), w.Actor, visitID)
	must(t, err)
	return tok
}

// Visit reads a visit from the store.
func (w *World) Visit(t testing.TB, id string) cloud.Visit {
	t.Helper()
	v, err := w.Svc().Store().Visit(context.Background(), w.Tenant, id)
	must(t, err)
	return v
}

// Head is the last sequence of Site's change feed.
func (w *World) Head(t testing.TB) uint64 {
	t.Helper()
	_, head, err := w.Svc().SiteChanges(context.Background(), w.Site, 1<<62, 1)
	must(t, err)
	return head
}

// CloudEdge reads what the cloud knows of an edge: its state as its last
// status (or last will) said.
func (w *World) CloudEdge(t testing.TB, id string) cloud.Edge {
	t.Helper()
	e, err := w.Svc().Store().Edge(context.Background(), id)
	must(t, err)
	return e
}

// EdgeFact reads a recorded fact from the store; false when there is none.
func (w *World) EdgeFact(t testing.TB, id string) (cloud.EdgeFact, bool) {
	t.Helper()
	f, err := w.Svc().Store().EdgeFact(context.Background(), w.Tenant, id)
	if errors.Is(err, cloud.ErrNotFound) {
		return cloud.EdgeFact{}, false
	}
	must(t, err)
	return f, true
}

// runPart runs a part's Run(ctx) until the returned stop, or the end of
// the test, and fails t when it returns an error or does not stop.
func runPart(t testing.TB, name string, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(wait):
				t.Errorf("%s did not stop within %v", name, wait)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
