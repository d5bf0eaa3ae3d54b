package gate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// scanCase is one decision path: setup prepares the cache and returns
// the gate to scan at, the text and the time; check looks at the cache
// reopened after the scan.
type scanCase struct {
	name     string
	setup    func(f *fixture) (gateID, text string, at time.Time)
	failOpen bool
	stuck    bool // the relay cannot be driven
	kind     protocol.FactKind
	reason   string
	check    func(t *testing.T, f *fixture, res gate.Result)
}

func TestScan_DecisionPaths(t *testing.T) {
	cases := []scanCase{
		{
			name: "expected visit checks in at an entry gate",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, f.token(v), t0
			},
			kind: protocol.FactCheckIn,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				v := f.visitOf(res.VisitID)
				require.Equal(t, string(passrule.CheckedIn), v.Status)
				require.Equal(t, 1, v.Uses)
				require.Equal(t, t0, *v.CheckedInAt)
				require.Equal(t, "Vera Visitor", v.VisitorName, "the cached visit is kept, not rebuilt from the token")
				require.Equal(t, res.VisitID, res.PassVisitID)
			},
		},
		{
			name: "reader's line ending and spaces are trimmed",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, "  " + f.token(v) + "\r\n", t0
			},
			kind: protocol.FactCheckIn,
		},
		{
			name: "forged token: right key ID, another private key",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				forger, err := passtoken.NewKey(nil)
				require.NoError(t, err)
				forger.ID = f.key.ID
				return f.entry, f.sign(forger, f.claims(v)), t0
			},
			reason: protocol.ReasonInvalidToken,
			check:  unchangedVisits,
		},
		{
			name: "token signed by another organisation's key",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				other, err := passtoken.NewKey(nil)
				require.NoError(t, err)
				return f.entry, f.sign(other, f.claims(v)), t0
			},
			reason: protocol.ReasonInvalidToken,
			check:  unchangedVisits,
		},
		{
			name: "text that is no pass",
			setup: func(f *fixture) (string, string, time.Time) {
				return f.entry, "https://example.com/?p=P1:AAAA", t0
			},
			reason: protocol.ReasonInvalidToken,
		},
		{
			name: "altered token",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				tok := []byte(f.token(v))
				i := len(tok) - 20
				tok[i] = map[bool]byte{true: 'B', false: 'A'}[tok[i] == 'A']
				return f.entry, string(tok), t0
			},
			reason: protocol.ReasonInvalidToken,
		},
		{
			name: "revoked pass",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Revoked = true })
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.Ended),
			check:  judged(string(passrule.Expected)),
		},
		{
			name: "visit cancelled in the cache while its token is still valid",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				tok := f.token(v)
				v.Status = string(passrule.Cancelled)
				f.put(v)
				return f.entry, tok, t0
			},
			reason: string(passrule.Ended),
			check:  judged(string(passrule.Cancelled)),
		},
		{
			name: "token for another site",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				c := f.claims(v)
				c.SiteID = ids.New(ids.Site)
				return f.entry, f.sign(f.key, c), t0
			},
			reason: string(passrule.WrongGate),
		},
		{
			name: "gate not among the pass's gates",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Rules.GateIDs = []string{f.both} })
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.WrongGate),
			check:  judged(string(passrule.Expected)),
		},
		{
			name: "cached gate list wins over the token's",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				tok := f.token(v) // every gate
				v.Rules.GateIDs = []string{f.both}
				f.put(v)
				return f.entry, tok, t0
			},
			reason: string(passrule.WrongGate),
		},
		{
			name: "not yet",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(31*time.Minute)), ptr(t0.Add(2*time.Hour))
				})
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.NotYet),
		},
		{
			name: "awaiting approval is not yet",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Status = string(passrule.AwaitingApproval) })
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.NotYet),
		},
		{
			name: "expired",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(-9*time.Hour)), ptr(t0.Add(-31*time.Minute))
				})
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.Expired),
		},
		{
			name: "outside daily hours in the site's zone",
			setup: func(f *fixture) (string, string, time.Time) {
				// 10:00 UTC is 11:00 in Berlin: outside 12:00–18:00 there.
				v := visit(func(v *protocol.Visit) { v.Rules.Daily = &protocol.Daily{From: 12 * 60, Until: 18 * 60} })
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.OutsideHours),
		},
		{
			name: "inside daily hours in the site's zone, not in UTC",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Rules.Daily = &protocol.Daily{From: 10*60 + 30, Until: 12 * 60} })
				f.put(v)
				return f.entry, f.token(v), t0
			},
			kind: protocol.FactCheckIn,
		},
		{
			name: "single-use pass used twice",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Rules.SingleUse = true })
				f.put(v)
				r, _ := newRelay(t)
				first := scan(f.newGate(f.entry, false, r), f.token(v), t0)
				require.True(t, first.Admitted)
				return f.entry, f.token(v), t0.Add(time.Minute)
			},
			reason: string(passrule.Used),
		},
		{
			name: "single-use pass after leaving cannot re-enter",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Rules.SingleUse, v.Uses, v.Status = true, 1, string(passrule.CheckedOut)
					v.CheckedInAt, v.CheckedOutAt = ptr(t0.Add(-time.Hour)), ptr(t0.Add(-time.Minute))
				})
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.Used),
		},
		{
			name: "visit never seen is admitted on its token alone",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) { v.Rules.GateIDs = []string{f.entry, f.both} })
				return f.entry, f.token(v), t0
			},
			kind: protocol.FactCheckIn,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				v := f.visitOf(res.VisitID)
				require.Equal(t, res.PassVisitID, v.ID)
				require.Equal(t, v.ID, v.ForVisitID)
				require.Equal(t, string(passrule.CheckedIn), v.Status)
				require.Equal(t, 1, v.Uses)
				require.Equal(t, t0.Add(-90*time.Minute), *v.ExpectedAt, "the token's not-before")
				require.Equal(t, t0.Add(7*time.Hour+30*time.Minute), *v.ExpectedUntil, "the token's not-after")
				require.Equal(t, []string{f.entry, f.both}, v.Rules.GateIDs)
				require.Empty(t, v.VisitorName)
			},
		},
		{
			name: "visit never seen is refused on its token alone",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(2*time.Hour)), ptr(t0.Add(3*time.Hour))
				})
				return f.entry, f.token(v), t0
			},
			reason: string(passrule.NotYet),
			check: func(t *testing.T, f *fixture, res gate.Result) {
				require.Empty(t, res.VisitID, "no visit the edge knows")
				require.Equal(t, 0, f.cache().View().Counts().Visits)
			},
		},
		{
			name: "re-entry on a multi-day pass makes a new visit",
			setup: func(f *fixture) (string, string, time.Time) {
				f.put(multiDayOut())
				return f.entry, f.token(multiDay), t0
			},
			kind: protocol.FactReEntry,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				require.NotEqual(t, multiDay.ID, res.VisitID)
				require.Equal(t, multiDay.ID, res.PassVisitID)
				old := f.visitOf(multiDay.ID)
				require.Equal(t, res.VisitID, old.ReenteredAs)
				require.Equal(t, string(passrule.CheckedOut), old.Status, "the old visit stays checked out")
				nv := f.visitOf(res.VisitID)
				require.Equal(t, string(passrule.CheckedIn), nv.Status)
				require.Equal(t, multiDay.ID, nv.ForVisitID)
				require.Equal(t, 2, nv.Uses)
				require.Equal(t, t0, *nv.CheckedInAt)
				require.Nil(t, nv.CheckedOutAt)
				require.Equal(t, old.ExpectedUntil, nv.ExpectedUntil)
				require.Equal(t, old.VisitorName, nv.VisitorName)
				require.Equal(t, old.Rules, nv.Rules)
			},
		},
		{
			name: "re-entry refused once the multi-day pass expired",
			setup: func(f *fixture) (string, string, time.Time) {
				f.put(multiDayOut())
				return f.entry, f.token(multiDay), multiDay.ExpectedUntil.Add(31 * time.Minute)
			},
			failOpen: true, // a day later the cache is stale too
			reason:   string(passrule.Expired),
		},
		{
			name: "checked-in visit refused at an entry gate",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 1, ptr(t0.Add(-time.Hour))
				})
				f.put(v)
				return f.entry, f.token(v), t0
			},
			reason: protocol.ReasonAlreadyIn,
			check:  judged(string(passrule.CheckedIn)),
		},
		{
			name: "exit gate checks out",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 1, ptr(t0.Add(-time.Hour))
				})
				f.put(v)
				return f.exit, f.token(v), t0
			},
			kind: protocol.FactCheckOut,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				v := f.visitOf(res.VisitID)
				require.Equal(t, string(passrule.CheckedOut), v.Status)
				require.Equal(t, t0, *v.CheckedOutAt)
				require.Equal(t, 1, v.Uses, "leaving uses nothing")
			},
		},
		{
			name: "exit gate lets out a visitor whose pass expired and names other gates",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 1, ptr(t0.Add(-9*time.Hour))
					v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(-9*time.Hour)), ptr(t0.Add(-2*time.Hour))
					v.Rules.SingleUse, v.Rules.GateIDs = true, []string{f.entry}
				})
				f.put(v)
				return f.exit, f.token(v), t0
			},
			kind: protocol.FactCheckOut,
		},
		{
			name: "exit gate refuses a visit that is not in",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.exit, f.token(v), t0
			},
			reason: protocol.ReasonNotIn,
			check:  judged(string(passrule.Expected)),
		},
		{
			name: "both-ways gate checks in an expected visit",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.both, f.token(v), t0
			},
			kind: protocol.FactCheckIn,
		},
		{
			name: "both-ways gate checks out a checked-in visit",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 1, ptr(t0.Add(-time.Hour))
				})
				f.put(v)
				return f.both, f.token(v), t0
			},
			kind: protocol.FactCheckOut,
		},
		{
			name: "both-ways gate re-enters a checked-out visit",
			setup: func(f *fixture) (string, string, time.Time) {
				f.put(multiDayOut())
				return f.both, f.token(multiDay), t0
			},
			kind: protocol.FactReEntry,
		},
		{
			name: "gate unknown to the cache is an entry gate",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return ids.New(ids.Gate), f.token(v), t0
			},
			kind: protocol.FactCheckIn,
		},
		{
			name: "stale cache fails secure",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, f.token(v), t0.Add(61 * time.Minute) // offline limit 60
			},
			reason: protocol.ReasonStale,
			check:  unchangedVisits,
		},
		{
			name: "stale cache fails open",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, f.token(v), t0.Add(61 * time.Minute)
			},
			failOpen: true,
			kind:     protocol.FactCheckIn,
		},
		{
			name: "fresh cache at the offline limit",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, f.token(v), t0.Add(60 * time.Minute)
			},
			kind: protocol.FactCheckIn,
		},
		{
			name: "relay failure after the admit was recorded voids it and puts the visit back",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit()
				f.put(v)
				return f.entry, f.token(v), t0
			},
			stuck:  true,
			reason: protocol.ReasonRelayFailed,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				require.ErrorIs(t, res.Err, gate.ErrRelay)
				unchangedVisits(t, f, res)
				judged(string(passrule.Expected))(t, f, res)
			},
		},
		{
			name: "relay failure on a visit never received leaves it expected",
			setup: func(f *fixture) (string, string, time.Time) {
				return f.entry, f.token(visit()), t0
			},
			stuck:  true,
			reason: protocol.ReasonRelayFailed,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				v := f.visitOf(res.PassVisitID)
				require.Equal(t, string(passrule.Expected), v.Status)
				require.Zero(t, v.Uses)
				require.Nil(t, v.CheckedInAt)
			},
		},
		{
			name: "relay failure on a check-out leaves the visitor in",
			setup: func(f *fixture) (string, string, time.Time) {
				v := visit(func(v *protocol.Visit) {
					v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 1, ptr(t0.Add(-time.Hour))
				})
				f.put(v)
				return f.exit, f.token(v), t0
			},
			stuck:  true,
			reason: protocol.ReasonRelayFailed,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				judged(string(passrule.CheckedIn))(t, f, res)
				require.Nil(t, f.visitOf(res.VisitID).CheckedOutAt)
			},
		},
		{
			name: "relay failure on a re-entry cancels the new visit and unlinks it",
			setup: func(f *fixture) (string, string, time.Time) {
				f.put(multiDayOut())
				return f.entry, f.token(multiDay), t0
			},
			stuck:  true,
			reason: protocol.ReasonRelayFailed,
			check: func(t *testing.T, f *fixture, res gate.Result) {
				require.NotEqual(t, multiDay.ID, res.VisitID)
				require.Equal(t, string(passrule.Cancelled), f.visitOf(res.VisitID).Status)
				require.Empty(t, f.visitOf(multiDay.ID).ReenteredAs)
				require.Equal(t, string(passrule.CheckedOut), f.visitOf(multiDay.ID).Status)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runScanCase(t, tc) })
	}
}

func runScanCase(t *testing.T, tc scanCase) {
	f := newFixture(t)
	gateID, text, at := tc.setup(f)
	before := f.outbox()
	visitsBefore := f.cache().View().Counts().Visits

	var r gate.Relay
	var p pin
	if tc.stuck {
		var err error
		r, err = relay.New(stuckOutput{}, relay.Config{Pin: "GPIO17", Pulse: time.Millisecond})
		require.NoError(t, err)
	} else {
		r, p = newRelay(t)
	}
	g := f.newGate(gateID, tc.failOpen, r)
	res := scan(g, text, at)

	want := tc.kind
	if want == "" {
		want = protocol.FactRefused
	}
	require.Equal(t, want, res.Kind, "reason %q", res.Reason)
	require.Equal(t, tc.reason, res.Reason)
	require.Equal(t, want != protocol.FactRefused, res.Admitted)
	require.Equal(t, gateID, res.GateID)
	require.NotEmpty(t, res.FactID)
	require.Positive(t, res.Decision)
	if !tc.stuck {
		require.NoError(t, res.Err)
		require.Equal(t, map[bool]int{true: 1, false: 0}[res.Admitted], p.pulses(), "one pulse for an admit, none for a refusal")
	}
	if tc.reason == protocol.ReasonInvalidToken {
		require.Empty(t, res.PassVisitID)
		require.Empty(t, res.VisitID)
	} else {
		require.NotEmpty(t, res.PassVisitID)
	}

	// What was committed survives a restart: exactly one fact more, the
	// scan's, and the visits it changed; for a relay that failed after
	// the admit was recorded, the admit and the refusal that voids it.
	f.reopen()
	after := f.outbox()
	if tc.stuck {
		require.Len(t, after, len(before)+2, "the admit, then the refusal voiding it")
		admit := after[len(after)-2]
		require.NotEqual(t, protocol.FactRefused, admit.Kind)
		require.Equal(t, admit.ID, after[len(after)-1].Voids)
		require.True(t, at.Equal(admit.At))
	} else {
		require.Len(t, after, len(before)+1, "exactly one fact per scan")
	}
	fact := after[len(after)-1]
	require.Equal(t, res.FactID, fact.ID)
	require.Equal(t, res.Kind, fact.Kind)
	require.Equal(t, res.Reason, fact.Reason)
	require.Equal(t, res.VisitID, fact.VisitID)
	require.Equal(t, res.PassVisitID, fact.PassVisitID)
	require.Equal(t, gateID, fact.GateID)
	require.Equal(t, f.edgeID, fact.EdgeID)
	require.True(t, at.Equal(fact.At), "the fact is at the scan time")
	if res.Kind == protocol.FactReEntry || tc.stuck && fact.PassVisitID != fact.VisitID {
		require.Equal(t, visitsBefore+1, f.cache().View().Counts().Visits)
	}
	if tc.check != nil {
		tc.check(t, f, res)
	}
}

// multiDay is a three-day pass whose visitor checked in yesterday and left.
var multiDay = func() protocol.Visit {
	id := ids.New(ids.Visit)
	return protocol.Visit{
		ID: id, Status: string(passrule.Expected), ForVisitID: id,
		ExpectedAt: ptr(t0.Add(-25 * time.Hour)), ExpectedUntil: ptr(t0.Add(48 * time.Hour)),
		Rules:       protocol.Rules{Window: protocol.Window{Before: 30, After: 30}, GateIDs: []string{}},
		VisitorName: "Carl Contractor", HostName: "Ada Lovelace",
	}
}()

func multiDayOut() protocol.Visit {
	v := multiDay
	v.Status, v.Uses = string(passrule.CheckedOut), 1
	v.CheckedInAt, v.CheckedOutAt = ptr(t0.Add(-24*time.Hour)), ptr(t0.Add(-16*time.Hour))
	return v
}

// unchangedVisits checks that a refusal changed no visit.
func unchangedVisits(t *testing.T, f *fixture, res gate.Result) {
	t.Helper()
	if res.PassVisitID == "" {
		return
	}
	if v, ok := f.cache().View().Visit(res.PassVisitID); ok {
		require.Nil(t, v.CheckedInAt, "a refusal checks nobody in")
		require.Zero(t, v.Uses)
	}
}

// judged checks that a refusal names the cached visit it judged, which is
// left in status.
func judged(status string) func(*testing.T, *fixture, gate.Result) {
	return func(t *testing.T, f *fixture, res gate.Result) {
		t.Helper()
		require.NotEmpty(t, res.VisitID)
		require.Equal(t, status, f.visitOf(res.VisitID).Status)
	}
}

// TestScan_ReEntryChain follows a multi-day pass through two re-entries:
// each scan judges the newest visit of the chain, and single use would be
// counted along it.
func TestScan_ReEntryChain(t *testing.T) {
	f := newFixture(t)
	f.put(multiDayOut())
	r, p := newRelay(t)
	in, out := f.newGate(f.entry, false, r), f.newGate(f.exit, false, r)
	tok := f.token(multiDay)

	first := scan(in, tok, t0)
	require.Equal(t, protocol.FactReEntry, first.Kind)
	left := scan(out, tok, t0.Add(time.Minute))
	require.Equal(t, protocol.FactCheckOut, left.Kind)
	require.Equal(t, first.VisitID, left.VisitID, "the exit checks out the newest visit of the chain")
	second := scan(in, tok, t0.Add(2*time.Minute))
	require.Equal(t, protocol.FactReEntry, second.Kind)
	require.NotEqual(t, first.VisitID, second.VisitID)

	require.Equal(t, first.VisitID, f.visitOf(multiDay.ID).ReenteredAs)
	require.Equal(t, second.VisitID, f.visitOf(first.VisitID).ReenteredAs)
	newest := f.visitOf(second.VisitID)
	require.Equal(t, multiDay.ID, newest.ForVisitID)
	require.Equal(t, 3, newest.Uses, "admissions counted along the chain")
	require.Equal(t, 3, p.pulses())

	again := scan(in, tok, t0.Add(3*time.Minute))
	require.Equal(t, protocol.ReasonAlreadyIn, again.Reason)
	require.Equal(t, second.VisitID, again.VisitID)
}

// TestScan_SinglePassOneAdmitAcrossGates scans one single-use pass at two
// gates at once, many times over: exactly one scan may admit.
func TestScan_SinglePassOneAdmitAcrossGates(t *testing.T) {
	for round := range 20 {
		f := newFixture(t)
		v := visit(func(v *protocol.Visit) { v.Rules.SingleUse = true })
		f.put(v)
		tok := f.token(v)
		r, p := newRelay(t)
		gates := []*gate.Gate{f.newGate(f.entry, false, r), f.newGate(f.entry2, false, r)}
		results := make([]gate.Result, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = scan(gates[i%2], tok, t0) })
		}
		wg.Wait()
		admitted := 0
		for _, res := range results {
			require.NoError(t, res.Err)
			if res.Admitted {
				admitted++
			} else {
				require.Equal(t, string(passrule.Used), res.Reason, "round %d", round)
			}
		}
		require.Equal(t, 1, admitted, "round %d", round)
		require.Equal(t, 1, p.pulses())
		require.Len(t, f.outbox(), len(results))
	}
}

// TestScan_AbandonedWait: a scan that waits for another scan of its pass
// and whose context ends records nothing.
func TestScan_AbandonedWait(t *testing.T) {
	f := newFixture(t)
	v := visit()
	f.put(v)
	release := make(chan struct{})
	entered := make(chan struct{})
	blocking := relayFunc(func(ctx context.Context, d time.Duration) error {
		close(entered)
		<-release
		return nil
	})
	g := f.newGate(f.entry, false, blocking)
	done := make(chan gate.Result)
	go func() { done <- scan(g, f.token(v), t0) }()
	<-entered // the first scan holds the pass, pulsing

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := g.Scan(ctx, f.token(v), t0)
	require.ErrorIs(t, res.Err, context.Canceled)
	require.False(t, res.Admitted)
	require.Empty(t, res.FactID)
	close(release)
	first := <-done
	require.True(t, first.Admitted)
	require.Len(t, f.outbox(), 1)
}

// relayFunc is a relay whose pulse, after it has started, is f.
type relayFunc func(ctx context.Context, d time.Duration) error

func (f relayFunc) Start(ctx context.Context, d time.Duration) (func() error, error) {
	return func() error { return f(ctx, d) }, nil
}

// TestScan_RecordedBeforeThePulse: the admit is durable in the outbox
// before the relay is commanded, so a power cut at any instant leaves
// either no opening or an opening with its fact.
func TestScan_RecordedBeforeThePulse(t *testing.T) {
	f := newFixture(t)
	v := visit()
	f.put(v)
	var atStart []protocol.Fact
	g := f.newGate(f.entry, false, relayStart(func() error {
		atStart = f.outbox()
		return nil
	}))
	res := scan(g, f.token(v), t0)
	require.True(t, res.Admitted)
	require.NoError(t, res.Err)
	require.Len(t, atStart, 1, "the fact is in the outbox when the relay is commanded")
	require.Equal(t, protocol.FactCheckIn, atStart[0].Kind)
	require.Equal(t, res.FactID, atStart[0].ID)
}

// relayStart is a relay whose Start runs f before it frees the passage;
// an error from f is a relay that could not be driven.
type relayStart func() error

func (f relayStart) Start(context.Context, time.Duration) (func() error, error) {
	if err := f(); err != nil {
		return nil, err
	}
	return func() error { return nil }, nil
}

// TestScan_RecordFailureOpensNothing: when the store cannot record the
// admit, the relay is not pulsed and the scan is refused record_failed.
func TestScan_RecordFailureOpensNothing(t *testing.T) {
	f := newFixture(t)
	v := visit()
	f.put(v)
	r, p := newRelay(t)
	g := f.newGate(f.entry, false, r)
	require.NoError(t, f.cache().Close()) // writes now fail
	for range 3 {
		res := scan(g, f.token(v), t0)
		require.False(t, res.Admitted)
		require.Equal(t, protocol.FactRefused, res.Kind)
		require.Equal(t, protocol.ReasonRecordFailed, res.Reason)
		require.ErrorIs(t, res.Err, gate.ErrRecord)
		require.Empty(t, res.FactID)
	}
	require.Zero(t, p.pulses(), "nothing opens unrecorded")
}

func TestDecide_DoesNothing(t *testing.T) {
	f := newFixture(t)
	v := visit()
	f.put(v)
	r, p := newRelay(t)
	g := f.newGate(f.entry, false, r)
	d := g.Decide(f.token(v), t0)
	require.True(t, d.Admit())
	require.Equal(t, protocol.FactCheckIn, d.Kind)
	require.Len(t, d.Visits, 1)
	require.Equal(t, string(passrule.CheckedIn), d.Visits[0].Status)
	require.Zero(t, p.pulses())
	require.Empty(t, f.outbox())
	require.Equal(t, string(passrule.Expected), f.visitOf(v.ID).Status)

	bad := g.Decide("P1:garbage", t0)
	require.False(t, bad.Admit())
	require.Equal(t, protocol.ReasonInvalidToken, bad.Reason)
}

func TestNew_Config(t *testing.T) {
	f := newFixture(t)
	r, _ := newRelay(t)
	for name, cfg := range map[string]gate.Config{
		"gate ID":  {ID: "gate_nope", SiteID: f.siteID, Relay: r, Store: f},
		"site ID":  {ID: f.entry, SiteID: f.entry, Relay: r, Store: f},
		"no relay": {ID: f.entry, SiteID: f.siteID, Store: f},
		"no store": {ID: f.entry, SiteID: f.siteID, Relay: r},
	} {
		_, err := gate.New(cfg)
		require.ErrorIs(t, err, gate.ErrConfig, name)
	}
}

// state is a hand-written State for the staleness rules.
type state struct {
	settings *protocol.Settings
	synced   time.Time
}

func (s state) Visit(string) (protocol.Visit, bool)    { return protocol.Visit{}, false }
func (s state) Person(string) (protocol.Person, bool)  { return protocol.Person{}, false }
func (s state) LastPunch(string) (protocol.Fact, bool) { return protocol.Fact{}, false }
func (s state) Gate(string) (protocol.Gate, bool)      { return protocol.Gate{}, false }
func (s state) KeysAt(time.Time) passtoken.KeySet      { return nil }
func (s state) BadgeKeysAt(string, time.Time) passtoken.KeySet {
	return nil
}
func (s state) Location() *time.Location { return time.UTC }
func (s state) SyncedAt() time.Time      { return s.synced }
func (s state) Settings() (protocol.Settings, bool) {
	if s.settings == nil {
		return protocol.Settings{}, false
	}
	return *s.settings, true
}

func TestStaleness(t *testing.T) {
	limit := func(m int) *protocol.Settings { return &protocol.Settings{Timezone: "UTC", OfflineLimitMinutes: m} }
	for _, tc := range []struct {
		name  string
		st    state
		at    time.Time
		stale bool
		why   string
	}{
		{"no settings", state{synced: t0}, t0, true, "settings"},
		{"never synced", state{settings: limit(60)}, t0, true, "never been synced"},
		{"within the limit", state{settings: limit(60), synced: t0}, t0.Add(time.Hour), false, ""},
		{"past the limit", state{settings: limit(60), synced: t0}, t0.Add(time.Hour + time.Second), true, "over the offline limit of 1h0m0s"},
		{"limit 0 is the default", state{settings: limit(0), synced: t0}, t0.Add(gate.DefaultOfflineLimit), false, ""},
		{"past the default", state{settings: limit(0), synced: t0}, t0.Add(gate.DefaultOfflineLimit + time.Second), true, "24h0m0s"},
		{"clock behind the last sync", state{settings: limit(1), synced: t0}, t0.Add(-time.Hour), false, ""},
	} {
		stale, why := gate.Staleness(tc.st, tc.at)
		require.Equal(t, tc.stale, stale, tc.name)
		require.Contains(t, why, tc.why, tc.name)
		if !tc.stale {
			require.Empty(t, why, tc.name)
		}
	}
}
