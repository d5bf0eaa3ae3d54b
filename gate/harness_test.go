package gate_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// t0 is 11:00 in Berlin, the site's zone: daily hours are judged there.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

const zone = "Europe/Berlin"

func ptr[T any](v T) *T { return &v }

// fixture is a site: a real cache file in a temp dir with three gates
// (two entries, an exit, one both ways), the organisation's signing key and the edge's
// settings, synced at t0.
type fixture struct {
	t      testing.TB
	path   string
	edgeID string
	siteID string
	key    passtoken.Key

	mu sync.Mutex
	c  *cache.Cache // swapped by reopen

	entry, entry2, exit, both string
	passes                    gate.Passes
}

func newFixture(tb testing.TB, visits ...protocol.Visit) *fixture {
	tb.Helper()
	key, err := passtoken.NewKey(nil)
	require.NoError(tb, err)
	f := &fixture{
		t: tb, path: filepath.Join(tb.TempDir(), "edge.db"), edgeID: ids.New(ids.Edge), siteID: ids.New(ids.Site), key: key,
		entry: ids.New(ids.Gate), entry2: ids.New(ids.Gate), exit: ids.New(ids.Gate), both: ids.New(ids.Gate),
	}
	f.c = f.open()
	f.snapshot(visits)
	require.NoError(tb, f.c.MarkSynced(t0))
	return f
}

// snapshot replaces the cache with the site's gates, key and settings and
// visits, as the cloud's snapshot would.
func (f *fixture) snapshot(visits []protocol.Visit) {
	f.t.Helper()
	pub := f.key.Public()
	parts := []protocol.Snapshot{{
		Settings: &protocol.Settings{Timezone: zone, OfflineLimitMinutes: 60},
		Gates: []protocol.Gate{
			{ID: f.entry, Name: "Turnstile in", Direction: gate.Entry},
			{ID: f.entry2, Name: "Car park in", Direction: gate.Entry},
			{ID: f.exit, Name: "Turnstile out", Direction: gate.Exit},
			{ID: f.both, Name: "Side door", Direction: gate.Both},
		},
		Keys: []protocol.Key{{ID: pub.ID, Public: pub.Key}},
	}}
	for len(visits) > 0 { // in parts of at most MaxSnapshot visits, as the cloud sends them
		n := min(len(visits), protocol.MaxSnapshot)
		if last := &parts[len(parts)-1]; last.Visits == nil {
			last.Visits = visits[:n]
		} else {
			parts = append(parts, protocol.Snapshot{Visits: visits[:n]})
		}
		visits = visits[n:]
	}
	for i := range parts {
		parts[i].Seq, parts[i].Part, parts[i].Parts = 1, i+1, len(parts)
	}
	require.NoError(f.t, f.cache().ReplaceSnapshot(parts))
}

func (f *fixture) open() *cache.Cache {
	f.t.Helper()
	c, err := cache.Open(f.path, cache.Options{EdgeID: f.edgeID})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

// cache returns the open cache.
func (f *fixture) cache() *cache.Cache {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c
}

// reopen closes the cache file and opens it again, as after a restart:
// what it shows is what was committed.
func (f *fixture) reopen() *cache.Cache {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NoError(f.t, f.c.Close())
	f.c = f.open()
	return f.c
}

// State and Record make the fixture the gates' Store, as edge adapts the
// cache in production.
func (f *fixture) State() gate.State { return f.cache().View() }

func (f *fixture) Record(ch gate.Change, fact protocol.Fact) (protocol.Fact, error) {
	lc := cache.LocalChange{Visits: ch.Visits}
	if r := ch.RestorePunch; r != nil {
		lc.RestorePunch = &cache.PunchRestore{PersonID: r.PersonID, Last: r.Last}
	}
	return f.cache().Record(lc, fact)
}

// put adds or replaces visits through the change feed.
func (f *fixture) put(visits ...protocol.Visit) {
	f.t.Helper()
	c := f.cache()
	seq := c.View().Seq()
	var chs []protocol.Change
	for i := range visits {
		chs = append(chs, protocol.Change{Seq: seq + 1 + uint64(i), At: t0, Visit: &visits[i]})
	}
	_, err := c.Apply(chs)
	require.NoError(f.t, err)
}

// visit is an expected visit today, 09:00 to 17:00 UTC with a 30-minute
// window each side, unless mod changes it; it is not in the cache until put.
func visit(mod ...func(*protocol.Visit)) protocol.Visit {
	id := ids.New(ids.Visit)
	v := protocol.Visit{
		ID: id, Status: string(passrule.Expected), ForVisitID: id,
		ExpectedAt: ptr(t0.Add(-time.Hour)), ExpectedUntil: ptr(t0.Add(7 * time.Hour)),
		Rules:       protocol.Rules{Window: protocol.Window{Before: 30, After: 30}, GateIDs: []string{}},
		VisitorName: "Vera Visitor", HostName: "Ada Lovelace",
	}
	for _, m := range mod {
		m(&v)
	}
	return v
}

// token is v's pass as the cloud signs it.
func (f *fixture) token(v protocol.Visit) string {
	f.t.Helper()
	return f.sign(f.key, f.claims(v))
}

func (f *fixture) claims(v protocol.Visit) passtoken.Claims {
	c := passtoken.Claims{VisitID: v.ForVisitID, SiteID: f.siteID, GateIDs: v.Rules.GateIDs, SingleUse: v.Rules.SingleUse, IssuedAt: t0.Add(-24 * time.Hour)}
	if v.ExpectedAt != nil {
		c.NotBefore = v.ExpectedAt.Add(-time.Duration(v.Rules.Window.Before) * time.Minute)
	}
	if v.ExpectedUntil != nil {
		c.NotAfter = v.ExpectedUntil.Add(time.Duration(v.Rules.Window.After) * time.Minute)
	}
	if d := v.Rules.Daily; d != nil {
		c.Daily = &passtoken.Daily{From: int(d.From), Until: int(d.Until)}
	}
	return c
}

func (f *fixture) sign(k passtoken.Key, c passtoken.Claims) string {
	f.t.Helper()
	tok, err := passtoken.Sign(k, c)
	require.NoError(f.t, err)
	return tok
}

// pin is a simulated relay line that counts the pulses it was given.
type pin struct{ *relay.Simulated }

func (p pin) pulses() int {
	n := 0
	for _, w := range p.Writes() {
		if w.Level == gpio.High {
			n++
		}
	}
	return n
}

// newRelay is a real relay on a simulated pin with a 1 ms pulse.
func newRelay(tb testing.TB) (*relay.Relay, pin) {
	tb.Helper()
	p := pin{relay.NewSimulated("GPIO17", slog.New(slog.DiscardHandler))}
	r, err := relay.New(relay.PinOutput(p), relay.Config{Pin: "GPIO17", Pulse: time.Millisecond})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = r.Close() })
	return r, p
}

// stuckOutput is a relay line that cannot be driven active.
type stuckOutput struct{}

func (stuckOutput) Out(high bool) error {
	if high {
		return errors.New("relay board not answering")
	}
	return nil
}

// newGate makes a gate on the fixture's store.
func (f *fixture) newGate(id string, failOpen bool, r gate.Relay) *gate.Gate {
	f.t.Helper()
	g, err := gate.New(gate.Config{ID: id, SiteID: f.siteID, FailOpen: failOpen, Relay: r, Store: f, Passes: &f.passes, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f.t, err)
	return g
}

// outbox is every waiting fact.
func (f *fixture) outbox() []protocol.Fact {
	f.t.Helper()
	facts, err := f.cache().Outbox(0)
	require.NoError(f.t, err)
	return facts
}

func (f *fixture) visitOf(id string) protocol.Visit {
	f.t.Helper()
	v, ok := f.cache().View().Visit(id)
	require.True(f.t, ok, "visit %s is not in the cache", id)
	return v
}

func scan(g *gate.Gate, text string, at time.Time) gate.Result {
	return g.Scan(context.Background(), text, at)
}
