package mqttsync

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync/mqtttest"
	"github.com/svc-vms/svc/sync/protocol"
)

// The Mosquitto suite runs when EnvMQTT names a broker (anonymous access,
// no ACL); with EnvRequire=1 a missing one fails instead of skipping.
const (
	envMQTT    = "SVC_TEST_MQTT_URL"
	envRequire = "SVC_TEST_REQUIRE_SERVICES"
)

// backend is a broker the scenarios run against.
type backend struct {
	name string
	url  string // for clients that connect directly
	// creds returns the credentials of a client with acc, registering
	// them with the embedded broker.
	creds func(acc broker.Access) (user, pass string)
	// filters are the cloud's subscriptions for sites of org: nil for the
	// protocol's own on a broker of the test's alone; narrowed to the org
	// on a shared Mosquitto, so parallel tests do not take each other's
	// shares.
	filters func(org string) []string
	// restart stops the broker and starts a new one on the same address
	// (embedded only; nil otherwise).
	restart func()
}

// backendKind names a broker and starts one for a test.
type backendKind struct {
	name  string
	start func(*testing.T) *backend
}

// backends are the brokers to run a scenario on: the embedded one and
// Mosquitto. Mosquitto's start skips its test when SVC_TEST_MQTT_URL is
// not set, so that the skip is counted (make test's summary lists it), and
// fails it instead with SVC_TEST_REQUIRE_SERVICES=1.
func backends(t *testing.T) []backendKind {
	t.Helper()
	return []backendKind{{"embedded", embedded}, {"mosquitto", mosquitto}}
}

// testAuth is the embedded broker's Authenticator: credentials registered
// by the test.
type testAuth struct {
	mu    sync.Mutex
	users map[string]broker.Access
}

func (a *testAuth) add(acc broker.Access) (string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	user := "cloud-" + ids.New(ids.Edge)
	if !acc.Cloud {
		user = acc.EdgeID
	}
	a.users[user] = acc
	return user, "pw-" + user
}

func (a *testAuth) Authenticate(_ context.Context, user, pass string) (broker.Access, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc, ok := a.users[user]
	if !ok || pass != "pw-"+user {
		return broker.Access{}, errors.New("unknown credentials")
	}
	return acc, nil
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SVC_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// startBroker runs an embedded broker on addr until the test ends or stop
// is called.
func startBroker(t *testing.T, addr string, auth broker.Authenticator) (b *broker.Broker, stop func()) {
	t.Helper()
	b, err := broker.New(broker.Config{Listen: addr, Auth: auth, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return b, stop
}

func embedded(t *testing.T) *backend {
	t.Helper()
	auth := &testAuth{users: make(map[string]broker.Access)}
	b, stop := startBroker(t, "127.0.0.1:0", auth)
	addr := b.Addr()
	return &backend{
		name:    "embedded",
		url:     "tcp://" + addr,
		creds:   auth.add,
		filters: func(string) []string { return nil },
		restart: func() {
			stop()
			_, stop = startBroker(t, addr, auth)
		},
	}
}

// mosquitto is the Mosquitto at envMQTT. Without it, t is skipped, or
// fails with envRequire=1.
func mosquitto(t *testing.T) *backend {
	t.Helper()
	url := os.Getenv(envMQTT)
	if url == "" {
		if os.Getenv(envRequire) == "1" {
			t.Fatalf("%s is not set but %s=1", envMQTT, envRequire)
		}
		t.Skipf("%s is not set", envMQTT)
	}
	return &backend{
		name:  "mosquitto",
		url:   url,
		creds: func(broker.Access) (string, string) { return "", "" },
		filters: func(org string) []string {
			var out []string
			for _, f := range []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus} {
				out = append(out, strings.Replace(f, "/+/+/sites/", "/test/"+org+"/sites/", 1))
			}
			return out
		},
	}
}

// forget removes a client's persistent session and retained status from a
// broker that outlives the test (Mosquitto keeps them on disk).
func (b *backend) forget(t *testing.T, clientID, statusTopic string) {
	t.Helper()
	if b.name != "mosquitto" {
		return
	}
	t.Cleanup(func() {
		opts := paho.NewClientOptions().AddBroker(b.url).SetClientID(clientID).SetCleanSession(true).SetProtocolVersion(4)
		c := paho.NewClient(opts)
		if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Logf("forget session %s: %v", clientID, tok.Error())
			return
		}
		if statusTopic != "" {
			c.Publish(statusTopic, 1, true, []byte{}).WaitTimeout(5 * time.Second)
		}
		c.Disconnect(100)
	})
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test with what after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(timeout, 5*time.Millisecond, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// waitMoving waits for done, failing only when progress (a figure that
// changes while the work goes on: facts left, the seq reached) has stood
// still for stall. A long drain on a loaded machine is slow, not stuck,
// and the time it takes is the load program's to measure.
func waitMoving(t testing.TB, stall time.Duration, what string, progress func() uint64, done func() bool) {
	t.Helper()
	for last := progress(); !done(); {
		moved := poll.Until(stall, 20*time.Millisecond, func() bool {
			return done() || progress() != last
		})
		if !moved {
			t.Fatalf("%s stood still at %d for %v", what, last, stall)
		}
		last = progress()
	}
}

// run starts r in a goroutine until the test ends, and checks it returns
// nil.
func run(t *testing.T, r func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Errorf("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// testEdge is an edge half on a fake store, connected through a proxy.
type testEdge struct {
	*Edge
	store  *fakeEdge
	proxy  *mqtttest.Proxy
	site   protocol.Site
	id     string
	stop   func()
	config EdgeConfig
}

func startEdge(t *testing.T, b *backend, site protocol.Site, cloud *fakeCloud, mod func(*EdgeConfig)) *testEdge {
	t.Helper()
	id := ids.New(ids.Edge)
	store := newFakeEdge(id)
	if cloud != nil {
		cloud.addEdge(site, id)
	}
	p := mqtttest.NewProxy(t, b.url)
	user, pass := b.creds(broker.Access{Site: site, EdgeID: id})
	b.forget(t, id, site.Status(id))
	cfg := EdgeConfig{
		BrokerURL: p.URL(), Username: user, Password: pass,
		Site: site, EdgeID: id, Store: store, Logger: testLogger(t), Software: "test",
		ResyncEvery: 2 * time.Second, ResyncTimeout: 2 * time.Second, AckTimeout: 2 * time.Second,
		StatusEvery: 2 * time.Second, SyncedEvery: 100 * time.Millisecond,
		ConnectTimeout: 2 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEdge(cfg)
	require.NoError(t, err)
	te := &testEdge{Edge: e, store: store, proxy: p, site: site, id: id, config: cfg}
	te.stop = run(t, e.Run)
	return te
}

// startCloud starts a cloud half serving the sites of org.
func startCloud(t *testing.T, b *backend, org string, store CloudStore, mod func(*CloudConfig)) (*Cloud, func()) {
	t.Helper()
	user, pass := b.creds(broker.Access{Cloud: true})
	clientID := "svc-cloud-test-" + ids.New(ids.Edge)
	b.forget(t, clientID, "")
	cfg := CloudConfig{
		BrokerURL: b.url, Username: user, Password: pass, ClientID: clientID,
		Store: store, Logger: testLogger(t), Filters: b.filters(org),
		PollEvery: 20 * time.Millisecond, ConnectTimeout: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewCloud(cfg)
	require.NoError(t, err)
	stop := run(t, c.Run)
	waitFor(t, 10*time.Second, "the cloud half to connect", func() bool { return c.State().Connected })
	return c, stop
}

// rawClient connects a plain paho client with acc's credentials, for
// publishing what the halves would not.
func rawClient(t *testing.T, b *backend, acc broker.Access, clientID string) paho.Client {
	t.Helper()
	user, pass := b.creds(acc)
	opts := paho.NewClientOptions().AddBroker(b.url).SetClientID(clientID).SetUsername(user).SetPassword(pass).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false)
	c := paho.NewClient(opts)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(5*time.Second), "connect")
	require.NoError(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publish(t *testing.T, c paho.Client, topic string, retained bool, payload []byte) {
	t.Helper()
	tok := c.Publish(topic, 1, retained, payload)
	require.True(t, tok.WaitTimeout(5*time.Second), "publish to %s", topic)
	require.NoError(t, tok.Error())
}
