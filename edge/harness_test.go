package edge_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/stretchr/testify/require"
	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// clock is the App's injected time, moved by the test.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }

// syncer plays the sync half: at construction it fills the cache as the
// cloud's snapshot would; Notify counts; Run waits for the end or fails
// when told to.
type syncer struct {
	notified chan struct{}
	fail     error
	ran      atomic.Bool
}

func (s *syncer) Run(ctx context.Context) error {
	s.ran.Store(true)
	if s.fail != nil {
		return s.fail
	}
	<-ctx.Done()
	return ctx.Err() // as a client stopped by its context would
}

func (s *syncer) Notify() {
	select {
	case s.notified <- struct{}{}:
	default:
	}
}

// site is an App under test with what it was made of.
type site struct {
	t *testing.T
	// withDeps, when set, changes the App's dependencies before start.
	withDeps func(*edge.Deps)
	cfg      *config.Config
	app      *edge.App
	clock    *clock
	key      passtoken.Key
	sync     *syncer
	pins     map[string]*relay.Simulated
	pinMu    sync.Mutex
	entry    string // tcp reader, camera, door sensor; fail secure
	exit     string // tcp reader; fail open
	visits   []protocol.Visit
	people   []protocol.Person // the first active, the second deactivated
	done     chan error
	cancel   context.CancelFunc
	srv      *httptest.Server
	noFill   bool // leave the cache empty: never synced
	logs     *logBuffer
	// cache is the App's, as the sync half got it.
	cache atomic.Pointer[cache.Cache]
	// wrapPin, when set, wraps each pin the App opens.
	wrapPin func(name string, p *relay.Simulated) gpio.PinIO
}

type option func(*site)

func withoutSync() option              { return func(s *site) { s.noFill = true } }
func withSyncFailure(err error) option { return func(s *site) { s.sync.fail = err } }

func newSite(t *testing.T, opts ...option) *site {
	t.Helper()
	key, err := passtoken.NewKey(nil)
	require.NoError(t, err)
	s := &site{
		t: t, clock: newClock(t0), key: key, sync: &syncer{notified: make(chan struct{}, 100)},
		pins: map[string]*relay.Simulated{}, entry: ids.New(ids.Gate), exit: ids.New(ids.Gate), logs: &logBuffer{},
	}
	for _, o := range opts {
		o(s)
	}
	dir := t.TempDir()
	s.cfg = &config.Config{
		Site:      protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)},
		EdgeID:    ids.New(ids.Edge),
		DataDir:   dir,
		CachePath: filepath.Join(dir, "state", "cache.db"),
		Listen:    "127.0.0.1:0",
		Gates: []config.Gate{
			{
				ID:        s.entry,
				Readers:   []config.Reader{{Kind: config.TCP, Listen: "127.0.0.1:0"}, {Kind: config.Camera}},
				Relay:     relay.Config{Pin: "GPIO17", Pulse: time.Millisecond},
				Door:      &relay.DoorConfig{Pin: "GPIO27", Poll: time.Millisecond},
				WhenStale: config.FailSecure,
			},
			{
				ID:        s.exit,
				Readers:   []config.Reader{{Kind: config.TCP, Listen: "127.0.0.1:0"}},
				Relay:     relay.Config{Pin: "GPIO22", Pulse: time.Millisecond},
				WhenStale: config.FailOpen,
			},
		},
	}
	for range 3 {
		s.visits = append(s.visits, s.newVisit())
	}
	for _, active := range []bool{true, false} {
		s.people = append(s.people, protocol.Person{ID: ids.New(ids.Person), Name: "Erin Employee", Active: active,
			PassIssuedAt: t0.Add(-24 * time.Hour).Unix()})
	}
	return s
}

// personToken is the person's current pass as the cloud signs it.
func (s *site) personToken(p protocol.Person) string {
	s.t.Helper()
	tok, err := passtoken.SignPerson(s.key, passtoken.PersonClaims{PersonID: p.ID, IssuedAt: time.Unix(p.PassIssuedAt, 0)})
	require.NoError(s.t, err)
	return tok
}

func (s *site) newVisit() protocol.Visit {
	id := ids.New(ids.Visit)
	return protocol.Visit{
		ID: id, Status: string(passrule.Expected), ForVisitID: id,
		ExpectedAt: ptr(t0.Add(-time.Hour)), ExpectedUntil: ptr(t0.Add(7 * time.Hour)),
		Rules:       protocol.Rules{Window: protocol.Window{Before: 30, After: 30}, GateIDs: []string{}},
		VisitorName: "Vera Visitor", HostName: "Ada Lovelace",
	}
}

// fill is the cloud's first snapshot, and the sync that brought it.
func (s *site) fill(c *cache.Cache) error {
	pub := s.key.Public()
	err := c.ReplaceSnapshot([]protocol.Snapshot{{
		Seq: 7, Part: 1, Parts: 1,
		Settings: &protocol.Settings{Timezone: "Europe/Berlin", OfflineLimitMinutes: 60},
		Gates: []protocol.Gate{
			{ID: s.entry, Name: "Turnstile in", Direction: "entry"},
			{ID: s.exit, Name: "Turnstile out", Direction: "exit"},
		},
		Keys:   []protocol.Key{{ID: pub.ID, Public: pub.Key}},
		Visits: s.visits,
		People: s.people,
	}})
	if err != nil {
		return err
	}
	return c.MarkSynced(t0)
}

func (s *site) openPin(name string) (gpio.PinIO, error) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	p, ok := s.pins[name]
	if !ok {
		p = relay.NewSimulated(name, slog.New(slog.DiscardHandler))
		s.pins[name] = p
	}
	if s.wrapPin != nil {
		return s.wrapPin(name, p), nil
	}
	return p, nil
}

func (s *site) pin(name string) *relay.Simulated {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	return s.pins[name]
}

// pulses counts the relay's active levels (the relays are active high).
func (s *site) pulses(name string) int {
	n := 0
	for _, w := range s.pin(name).Writes() {
		if w.Level == gpio.High {
			n++
		}
	}
	return n
}

// deps are the App's dependencies.
func (s *site) deps() edge.Deps {
	d := edge.Deps{
		Logger:  s.logs.logger(),
		OpenPin: s.openPin,
		NewSyncer: func(c *cache.Cache, _ ed25519.PublicKey) (edge.Syncer, error) {
			s.cache.Store(c)
			if !s.noFill {
				if err := s.fill(c); err != nil {
					return nil, err
				}
			}
			return s.sync, nil
		},
		BrokerState: func() any { return map[string]any{"connected": true, "broker": "tcp://broker.test:1883"} },
		Now:         s.clock.now,
		Debounce:    -1,
	}
	if s.withDeps != nil {
		s.withDeps(&d)
	}
	return d
}

// start runs the App until the test ends.
func (s *site) start() *site {
	s.t.Helper()
	app, err := edge.New(s.cfg, s.deps())
	require.NoError(s.t, err)
	s.app = app
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- app.Run(ctx) }()
	select {
	case <-app.Ready():
	case err := <-s.done:
		s.t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		s.t.Fatal("the App did not start")
	}
	s.srv = httptest.NewServer(app.Handler())
	s.t.Cleanup(func() {
		s.srv.Close()
		_ = s.stop()
	})
	return s
}

// stop ends Run and returns its error.
func (s *site) stop() error {
	s.cancel()
	select {
	case err, ok := <-s.done:
		if !ok {
			return nil
		}
		close(s.done)
		return err
	case <-time.After(10 * time.Second):
		s.t.Error("Run did not return")
		return nil
	}
}

func (s *site) token(v protocol.Visit) string {
	s.t.Helper()
	c := passtoken.Claims{VisitID: v.ID, SiteID: s.cfg.Site.SiteID, IssuedAt: t0.Add(-time.Hour),
		NotBefore: v.ExpectedAt.Add(-30 * time.Minute), NotAfter: v.ExpectedUntil.Add(30 * time.Minute)}
	tok, err := passtoken.Sign(s.key, c)
	require.NoError(s.t, err)
	return tok
}

// waitNotified waits for the sync half to hear of a new fact.
func (s *site) waitNotified() {
	s.t.Helper()
	select {
	case <-s.sync.notified:
	case <-time.After(5 * time.Second):
		s.t.Fatal("Notify was not called")
	}
}

// outbox reads the facts waiting, from the file itself, after the App
// stopped.
func (s *site) outboxAfterStop() []protocol.Fact {
	s.t.Helper()
	require.NoError(s.t, s.stop())
	c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: s.cfg.EdgeID})
	require.NoError(s.t, err, "Run closed the cache")
	defer c.Close()
	facts, err := c.Outbox(0)
	require.NoError(s.t, err)
	return facts
}

func (s *site) get(path string) (*http.Response, string) {
	s.t.Helper()
	resp, err := s.srv.Client().Get(s.srv.URL + path)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp, string(body)
}

func (s *site) post(path, contentType string, body io.Reader) (*http.Response, string) {
	s.t.Helper()
	resp, err := s.srv.Client().Post(s.srv.URL+path, contentType, body)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp, string(b)
}

// metrics scrapes /metrics and parses it back: every sample by its name
// and labels as written ("name{a=\"x\",b=\"y\"}"), and each family's type.
func (s *site) metrics() (samples map[string]float64, types map[string]string) {
	s.t.Helper()
	resp, body := s.get("/metrics")
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	require.Equal(s.t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	samples, types = map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	family := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			continue
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			require.Len(s.t, f, 4, line)
			_, seen := types[f[2]]
			require.False(s.t, seen, "family %s written twice", f[2])
			family, types[f[2]] = f[2], f[3]
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(s.t, i, line)
		name, value := line[:i], line[i+1:]
		require.True(s.t, strings.HasPrefix(name, family), "sample %s outside its family %s", name, family)
		v, err := strconv.ParseFloat(value, 64)
		require.NoError(s.t, err, line)
		_, dup := samples[name]
		require.False(s.t, dup, "sample %s written twice", name)
		samples[name] = v
	}
	require.NoError(s.t, sc.Err())
	return samples, types
}

// logBuffer is a logger whose output a test can read, safely.
type logBuffer struct{ lockedbuf.Buffer }

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// eventually polls cond until it holds or five seconds pass.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	if !poll.Until(5*time.Second, 5*time.Millisecond, cond) {
		t.Fatal(msg)
	}
}

var errBrokerDown = errors.New("broker refused the edge's credentials")

func mkdirFor(path string) error { return os.MkdirAll(filepath.Dir(path), 0o700) }
