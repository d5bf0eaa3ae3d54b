package gate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// issued is when the people of these tests were given their passes.
var issued = t0.Add(-30 * 24 * time.Hour)

// employee is an active person whose pass was issued at issued; not in the
// cache until putPerson.
func employee(mod ...func(*protocol.Person)) protocol.Person {
	p := protocol.Person{ID: ids.New(ids.Person), Name: "Erin Employee", Active: true, PassIssuedAt: issued.Unix()}
	for _, m := range mod {
		m(&p)
	}
	return p
}

// putPerson adds or replaces people through the change feed.
func (f *fixture) putPerson(people ...protocol.Person) {
	f.t.Helper()
	c := f.cache()
	seq := c.View().Seq()
	var chs []protocol.Change
	for i := range people {
		chs = append(chs, protocol.Change{Seq: seq + 1 + uint64(i), At: t0, Person: &people[i]})
	}
	_, err := c.Apply(chs)
	require.NoError(f.t, err)
}

// personToken is the person's pass as the cloud signs it, issued at at.
func (f *fixture) personToken(p protocol.Person, at time.Time) string {
	f.t.Helper()
	tok, err := passtoken.SignPerson(f.key, passtoken.PersonClaims{PersonID: p.ID, IssuedAt: at})
	require.NoError(f.t, err)
	return tok
}

// punchScan is one scan of a punch case and what it must do.
type punchScan struct {
	gate   func(f *fixture) string // nil: the entry gate
	after  time.Duration           // since t0
	token  func(f *fixture, p protocol.Person) string
	kind   protocol.FactKind // empty: refused
	reason string
	dir    string
	repeat bool // admitted as a passage: recorded, no new punch
}

type punchCase struct {
	name     string
	person   func() protocol.Person
	cached   bool // the cloud has sent the person
	failOpen bool
	stuck    bool // the relay cannot be driven
	scans    []punchScan
}

func entryGate(f *fixture) string { return f.entry }
func exitGate(f *fixture) string  { return f.exit }
func bothGate(f *fixture) string  { return f.both }

func TestScan_PersonalPasses(t *testing.T) {
	in, out := protocol.DirectionIn, protocol.DirectionOut
	punch := protocol.FactPunch
	cases := []punchCase{
		{name: "entry gate punches in", cached: true,
			scans: []punchScan{{gate: entryGate, kind: punch, dir: in}}},
		{name: "exit gate punches out", cached: true,
			scans: []punchScan{{gate: exitGate, kind: punch, dir: out}}},
		{name: "a gate used both ways toggles, in when there is no punch yet", cached: true,
			scans: []punchScan{
				{gate: bothGate, kind: punch, dir: in},
				{gate: bothGate, after: 2 * time.Minute, kind: punch, dir: out},
				{gate: bothGate, after: 4 * time.Minute, kind: punch, dir: in},
			}},
		{name: "a gate used both ways follows the last punch at any gate of the site", cached: true,
			scans: []punchScan{
				{gate: entryGate, kind: punch, dir: in},
				{gate: bothGate, after: 10 * time.Second, kind: punch, dir: out},
				{gate: exitGate, after: 20 * time.Second, kind: punch, dir: out},
				{gate: bothGate, after: 30 * time.Second, kind: punch, dir: in},
			}},
		{name: "entry and exit gates do not toggle", cached: true,
			scans: []punchScan{
				{gate: entryGate, kind: punch, dir: in},
				{gate: entryGate, after: 2 * time.Minute, kind: punch, dir: in},
				{gate: exitGate, after: 3 * time.Minute, kind: punch, dir: out},
				{gate: exitGate, after: 5 * time.Minute, kind: punch, dir: out},
			}},
		{name: "a repeat within 60 s at the same gate opens it but records nothing", cached: true,
			scans: []punchScan{
				{gate: entryGate, kind: punch, dir: in},
				{gate: entryGate, after: 30 * time.Second, kind: punch, dir: in, repeat: true},
				{gate: entryGate, after: 60 * time.Second, kind: punch, dir: in, repeat: true},
				{gate: entryGate, after: 61 * time.Second, kind: punch, dir: in},
			}},
		{name: "a repeat at a gate used both ways does not turn the punch around", cached: true,
			scans: []punchScan{
				{gate: bothGate, kind: punch, dir: in},
				{gate: bothGate, after: 20 * time.Second, kind: punch, dir: in, repeat: true},
				{gate: bothGate, after: 40 * time.Second, kind: punch, dir: in, repeat: true},
				{gate: bothGate, after: 61 * time.Second, kind: punch, dir: out},
			}},
		{name: "the repeat counts from the last punch recorded, not the last scan", cached: true,
			scans: []punchScan{
				{gate: bothGate, kind: punch, dir: in},
				{gate: bothGate, after: 50 * time.Second, kind: punch, dir: in, repeat: true},
				{gate: bothGate, after: 100 * time.Second, kind: punch, dir: out},
			}},
		{name: "another gate within 60 s is another punch", cached: true,
			scans: []punchScan{
				{gate: entryGate, kind: punch, dir: in},
				{gate: exitGate, after: 10 * time.Second, kind: punch, dir: out},
				{gate: entryGate, after: 20 * time.Second, kind: punch, dir: in},
			}},
		{name: "a clock turned back within 60 s is a repeat too", cached: true,
			scans: []punchScan{
				{gate: entryGate, after: time.Minute, kind: punch, dir: in},
				{gate: entryGate, after: 10 * time.Second, kind: punch, dir: in, repeat: true},
			}},
		{name: "deactivated person", cached: true, person: func() protocol.Person {
			return employee(func(p *protocol.Person) { p.Active = false })
		}, scans: []punchScan{{reason: protocol.ReasonPersonInactive}, {gate: exitGate, reason: protocol.ReasonPersonInactive}}},
		{name: "a replaced pass", cached: true, person: func() protocol.Person {
			return employee(func(p *protocol.Person) { p.PassIssuedAt = issued.Add(time.Hour).Unix() })
		}, scans: []punchScan{{reason: protocol.ReasonPassReplaced}}},
		{name: "the new pass of a reissue the edge has not heard of yet", cached: true,
			scans: []punchScan{{
				token:  func(f *fixture, p protocol.Person) string { return f.personToken(p, issued.Add(time.Hour)) },
				reason: protocol.ReasonPassReplaced,
			}}},
		{name: "deactivated is told before replaced", cached: true, person: func() protocol.Person {
			return employee(func(p *protocol.Person) { p.Active, p.PassIssuedAt = false, issued.Add(time.Hour).Unix() })
		}, scans: []punchScan{{reason: protocol.ReasonPersonInactive}}},
		{name: "a person the cloud has not sent is admitted on the signature", cached: false,
			scans: []punchScan{
				{gate: bothGate, kind: punch, dir: in},
				{gate: bothGate, after: 2 * time.Minute, kind: punch, dir: out},
			}},
		{name: "forged personal pass: right key ID, another private key", cached: true,
			scans: []punchScan{{token: func(f *fixture, p protocol.Person) string {
				forger, err := passtoken.NewKey(nil)
				require.NoError(f.t, err)
				forger.ID = f.key.ID
				tok, err := passtoken.SignPerson(forger, passtoken.PersonClaims{PersonID: p.ID, IssuedAt: issued})
				require.NoError(f.t, err)
				return tok
			}, reason: protocol.ReasonInvalidToken}}},
		{name: "personal pass altered", cached: true,
			scans: []punchScan{{token: func(f *fixture, p protocol.Person) string {
				tok := []byte(f.personToken(p, issued))
				tok[20] = map[bool]byte{true: 'B', false: 'A'}[tok[20] == 'A']
				return string(tok)
			}, reason: protocol.ReasonInvalidToken}}},
		{name: "text with the personal prefix that is no pass", cached: true,
			scans: []punchScan{{token: func(*fixture, protocol.Person) string { return passtoken.PersonPrefix + "HELLO" },
				reason: protocol.ReasonInvalidToken}}},
		{name: "stale cache fails secure", cached: true,
			scans: []punchScan{{after: 61 * time.Minute, reason: protocol.ReasonStale}}},
		{name: "stale cache fails open", cached: true, failOpen: true,
			scans: []punchScan{{after: 61 * time.Minute, kind: punch, dir: in}}},
		{name: "stale is told before deactivated", cached: true, person: func() protocol.Person {
			return employee(func(p *protocol.Person) { p.Active = false })
		}, scans: []punchScan{{after: 61 * time.Minute, reason: protocol.ReasonStale}}},
		{name: "a gate the cache does not know punches in", cached: true,
			scans: []punchScan{{gate: func(*fixture) string { return unknownGate }, kind: punch, dir: in}}},
		{name: "relay failure after the punch was recorded voids it and keeps no last punch", cached: true, stuck: true,
			scans: []punchScan{
				{gate: bothGate, reason: protocol.ReasonRelayFailed},
				{gate: bothGate, after: 10 * time.Second, reason: protocol.ReasonRelayFailed},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPunchCase(t, tc) })
	}
}

var unknownGate = ids.New(ids.Gate)

func runPunchCase(t *testing.T, tc punchCase) {
	f := newFixture(t)
	p := employee()
	if tc.person != nil {
		p = tc.person()
	}
	if tc.cached {
		f.putPerson(p)
	}
	var r gate.Relay
	var pn pin
	if tc.stuck {
		var err error
		r, err = relay.New(stuckOutput{}, relay.Config{Pin: "GPIO17", Pulse: time.Millisecond})
		require.NoError(t, err)
	} else {
		r, pn = newRelay(t)
	}
	gates := map[string]*gate.Gate{}
	var recorded []gate.Result
	var lastPunch *gate.Result
	admits := 0
	for i, s := range tc.scans {
		id := f.entry
		if s.gate != nil {
			id = s.gate(f)
		}
		if gates[id] == nil {
			gates[id] = f.newGate(id, tc.failOpen, r)
		}
		tok := f.personToken(p, issued)
		if s.token != nil {
			tok = s.token(f, p)
		}
		at := t0.Add(s.after)
		res := scan(gates[id], tok, at)

		want := s.kind
		switch {
		case s.repeat:
			want = protocol.FactPassage
		case want == "":
			want = protocol.FactRefused
		}
		require.Equal(t, want, res.Kind, "scan %d: reason %q", i, res.Reason)
		require.Equal(t, s.reason, res.Reason, "scan %d", i)
		require.Equal(t, want != protocol.FactRefused, res.Admitted, "scan %d", i)
		require.Equal(t, s.dir, res.Direction, "scan %d", i)
		require.Equal(t, s.repeat, res.Repeat, "scan %d", i)
		require.Empty(t, res.VisitID, "scan %d", i)
		require.Empty(t, res.PassVisitID, "scan %d", i)
		if s.reason == protocol.ReasonInvalidToken {
			require.Empty(t, res.PersonID, "scan %d: an invalid token names nobody", i)
		} else {
			require.Equal(t, p.ID, res.PersonID, "scan %d", i)
		}
		if tc.stuck {
			require.ErrorIs(t, res.Err, gate.ErrRelay, "scan %d", i)
		} else {
			require.NoError(t, res.Err, "scan %d", i)
		}
		require.NotEmpty(t, res.FactID, "scan %d: every scan is recorded, a repeat too", i)
		recorded = append(recorded, res)
		if res.Admitted {
			admits++
			if !s.repeat {
				lastPunch = &recorded[len(recorded)-1]
			}
		}
		if !tc.stuck {
			require.Equal(t, admits, pn.pulses(), "scan %d: a pulse for every admit, repeats included", i)
		}
	}

	// What was committed survives a restart: one fact per scan, with the
	// person, the direction, the gate and the scan time (for a relay that
	// failed, the punch it voids first); and the last punch recorded is
	// the person's LastPunch.
	f.reopen()
	out := f.outbox()
	if tc.stuck {
		require.Len(t, out, 2*len(recorded), "each admit, then the refusal that voids it")
		for i := 0; i < len(out); i += 2 {
			require.Equal(t, protocol.FactPunch, out[i].Kind)
			require.Equal(t, out[i].ID, out[i+1].Voids)
		}
		out = slices.DeleteFunc(out, func(f protocol.Fact) bool { return f.Kind == protocol.FactPunch })
	}
	require.Len(t, out, len(recorded))
	for j, s := range tc.scans {
		fact, res := out[j], recorded[j]
		require.Equal(t, res.FactID, fact.ID)
		require.Equal(t, res.Kind, fact.Kind)
		require.Equal(t, res.Reason, fact.Reason)
		require.Equal(t, res.PersonID, fact.PersonID)
		require.Equal(t, res.Direction, fact.Direction)
		require.Equal(t, res.GateID, fact.GateID)
		require.Empty(t, fact.VisitID)
		require.True(t, t0.Add(s.after).Equal(fact.At), "the fact is at the scan time")
		_, err := protocol.Encode(&fact)
		require.NoError(t, err, "the fact is one the cloud accepts")
	}
	last, ok := f.cache().View().LastPunch(p.ID)
	if lastPunch == nil {
		require.False(t, ok, "no punch recorded, none remembered")
	} else {
		require.True(t, ok)
		require.Equal(t, lastPunch.FactID, last.ID)
		require.Equal(t, lastPunch.Direction, last.Direction)
		require.Equal(t, lastPunch.GateID, last.GateID)
	}
	require.Zero(t, f.cache().View().Counts().Visits, "a punch makes no visit")
}

// A visit pass and a personal pass at one gate: each is judged by its own
// rules, and the visit pass is unchanged by the personal one's arrival.
func TestScan_VisitAndPersonalPassSideBySide(t *testing.T) {
	f := newFixture(t)
	v := visit()
	f.put(v)
	p := employee()
	f.putPerson(p)
	r, pn := newRelay(t)
	g := f.newGate(f.entry, false, r)
	first := scan(g, f.token(v), t0)
	require.Equal(t, protocol.FactCheckIn, first.Kind)
	require.Empty(t, first.PersonID)
	second := scan(g, f.personToken(p, issued), t0.Add(time.Second))
	require.Equal(t, protocol.FactPunch, second.Kind)
	require.Equal(t, p.ID, second.PersonID)
	require.Equal(t, 2, pn.pulses())

	// A visit pass's bytes behind the personal prefix, and the reverse, are
	// no pass at all.
	visitTok, personTok := f.token(v), f.personToken(p, issued)
	for _, text := range []string{passtoken.PersonPrefix + visitTok[len(passtoken.Prefix):], passtoken.Prefix + personTok[len(passtoken.PersonPrefix):]} {
		res := scan(g, text, t0.Add(time.Minute))
		require.Equal(t, protocol.ReasonInvalidToken, res.Reason)
	}
}

// The cloud's changes reach the decision: a deactivation, then a
// reactivation with a reissued pass, as the feed brings them.
func TestScan_PersonalPassFollowsTheFeed(t *testing.T) {
	f := newFixture(t)
	p := employee()
	f.putPerson(p)
	r, _ := newRelay(t)
	g := f.newGate(f.both, false, r)
	old := f.personToken(p, issued)
	require.Equal(t, protocol.DirectionIn, scan(g, old, t0).Direction)

	gone := p
	gone.Active = false
	f.putPerson(gone)
	require.Equal(t, protocol.ReasonPersonInactive, scan(g, old, t0.Add(2*time.Minute)).Reason)

	back := p
	back.PassIssuedAt = t0.Add(time.Minute).Unix()
	f.putPerson(back)
	require.Equal(t, protocol.ReasonPassReplaced, scan(g, old, t0.Add(3*time.Minute)).Reason)
	res := scan(g, f.personToken(p, t0.Add(time.Minute)), t0.Add(4*time.Minute))
	require.True(t, res.Admitted)
	require.Equal(t, protocol.DirectionOut, res.Direction, "the last punch was in, before the deactivation")
}

// Two readers of a gate used both ways see one person's pass at once, many
// times over: the scans take turns, so the punches alternate in and out
// and never two alike in a row.
func TestScan_PersonalPassTakesTurns(t *testing.T) {
	f := newFixture(t)
	p := employee()
	f.putPerson(p)
	r, _ := newRelay(t)
	a, b := f.newGate(f.both, false, r), f.newGate(f.both, false, r)
	tok := f.personToken(p, issued)
	for round := range 10 {
		at := t0.Add(time.Duration(round) * 2 * PunchSpacing)
		var wg sync.WaitGroup
		results := make([]gate.Result, 2)
		wg.Go(func() { results[0] = a.Scan(context.Background(), tok, at) })
		wg.Go(func() { results[1] = b.Scan(context.Background(), tok, at) })
		wg.Wait()
		repeats := 0
		for _, res := range results {
			require.True(t, res.Admitted)
			if res.Repeat {
				repeats++
			}
		}
		require.Equal(t, 1, repeats, "round %d: one punch and one repeat of it", round)
	}
	out := f.outbox()
	require.Len(t, out, 20, "a punch and a passage each round")
	out = slices.DeleteFunc(out, func(f protocol.Fact) bool { return f.Kind == protocol.FactPassage })
	require.Len(t, out, 10)
	for i, fact := range out {
		want := protocol.DirectionIn
		if i%2 == 1 {
			want = protocol.DirectionOut
		}
		require.Equal(t, want, fact.Direction, "punch %d", i)
	}
}

// PunchSpacing is more than the repeat rule's reach.
const PunchSpacing = gate.PunchRepeat + time.Second

func TestDecide_PersonalPassDoesNothing(t *testing.T) {
	f := newFixture(t)
	p := employee()
	f.putPerson(p)
	r, pn := newRelay(t)
	g := f.newGate(f.exit, false, r)
	d := g.Decide(f.personToken(p, issued), t0)
	require.True(t, d.Admit())
	require.Equal(t, protocol.FactPunch, d.Kind)
	require.Equal(t, p.ID, d.PersonID)
	require.Equal(t, protocol.DirectionOut, d.Direction)
	require.False(t, d.Repeat())
	require.Empty(t, d.Visits)
	require.Zero(t, pn.pulses())
	require.Empty(t, f.outbox())
	_, ok := f.cache().View().LastPunch(p.ID)
	require.False(t, ok)

	bad := g.Decide(passtoken.PersonPrefix+"garbage", t0)
	require.False(t, bad.Admit())
	require.Equal(t, protocol.ReasonInvalidToken, bad.Reason)

	scan(g, f.personToken(p, issued), t0)
	again := g.Decide(f.personToken(p, issued), t0.Add(time.Second))
	require.True(t, again.Admit())
	require.True(t, again.Repeat())
}
