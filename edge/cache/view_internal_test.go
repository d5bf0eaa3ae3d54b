package cache

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.jetify.com/typeid"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestVisitUID_RoundTrip(t *testing.T) {
	for _, id := range []string{
		"visit_00000000000000000000000000",
		"visit_7zzzzzzzzzzzzzzzzzzzzzzzzz",
		"visit_01h455vb4pex5vsknk084sn02q",
	} {
		u, ok := visitUID(id)
		require.True(t, ok, id)
		require.Equal(t, id, visitID(u))
	}
	for range 1000 {
		id := ids.New(ids.Visit)
		u, ok := visitUID(id)
		require.True(t, ok, id)
		require.Equal(t, id, visitID(u))

		// The uid is the TypeID's UUID, big-endian.
		tid, err := typeid.FromString(id)
		require.NoError(t, err)
		b := tid.UUIDBytes()
		var hi, lo uint64
		for i := range 8 {
			hi, lo = hi<<8|uint64(b[i]), lo<<8|uint64(b[8+i])
		}
		require.Equal(t, uid{hi, lo}, u)
	}
	for _, bad := range []string{"", "visit_", "gate_01h455vb4pex5vsknk084sn02q", "visit_81h455vb4pex5vsknk084sn02q", "visit_01h455vb4pex5vsknk084sn02u"} {
		_, ok := visitUID(bad)
		require.False(t, ok, bad)
	}
}

func TestVisitUID_HashSpreads(t *testing.T) {
	// The trie's first two levels take the hash's low 10 bits: UUIDv7s
	// made in one millisecond must spread over them.
	const buckets = 1 << (2 * chunkBits)
	var n [buckets]int
	for range 100 * buckets {
		u, _ := visitUID(ids.New(ids.Visit))
		n[u.hash()%buckets]++
	}
	for b, c := range n {
		require.Greater(t, c, 40, "bucket %d holds %d of %d", b, c, 100*buckets)
		require.Less(t, c, 170, "bucket %d holds %d of %d", b, c, 100*buckets)
	}
}

func TestVisitEntry_Size(t *testing.T) {
	// 64, and no pointers: gates, type, host and team interned as one
	// and named by an index, the visitor packed in the View's text and
	// named by where it starts, with a hash of its name beside it (no
	// index of names), and what few visits have (another visit's pass, a
	// re-entry, a receiver, a waiting time) in a trie of their own; it
	// was 88 with pointers (2.4 MB more for 100,000 visits), 120, and
	// 192 before that.
	require.Equal(t, uintptr(64), unsafe.Sizeof(visitEntry{}))
	require.Equal(t, uintptr(80), unsafe.Sizeof(tent[visitEntry]{}))
}

func TestVisitEntry_RoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)
	until, in, out := at.Add(8*time.Hour), at.Add(time.Minute), at.Add(2*time.Hour)
	pass, again, gate := ids.New(ids.Visit), ids.New(ids.Visit), ids.New(ids.Gate)
	full := protocol.Visit{
		ID: ids.New(ids.Visit), Status: string(passrule.CheckedOut),
		ExpectedAt: &at, ExpectedUntil: &until, CheckedInAt: &in, CheckedOutAt: &out,
		Rules: protocol.Rules{Daily: &protocol.Daily{From: 22 * 60, Until: 6 * 60}, Window: protocol.Window{Before: passrule.MaxWindowMinutes, After: 15},
			SingleUse: true, GateIDs: []string{gate, ids.New(ids.Gate)}},
		Uses: 3, Revoked: true, ForVisitID: pass, ReenteredAs: again, VisitorName: "Vera Visitor", HostName: "Ada Lovelace",
		GateID: gate,
	}
	own := ids.New(ids.Visit)
	bare := protocol.Visit{ID: own, Status: string(passrule.Expected), ForVisitID: own, Rules: protocol.Rules{GateIDs: []string{}}}
	desk := bare
	desk.ID, desk.ForVisitID, desk.Status, desk.CheckedInAt, desk.AtDesk = again, again, string(passrule.CheckedIn), &in, true
	entered := bare
	entered.ID, entered.ForVisitID, entered.GateID = pass, pass, gate
	waitingAt := at.Add(3 * time.Minute)
	kiosk := bare
	kiosk.ID, kiosk.ForVisitID = ids.New(ids.Visit), ""
	kiosk.ForVisitID = kiosk.ID
	kiosk.Status, kiosk.CheckedInAt, kiosk.NeedsSomeone, kiosk.WaitingSince = string(passrule.CheckedIn), &in, true, &waitingAt
	kiosk.HostID, kiosk.HostName, kiosk.TeamID, kiosk.TeamName = ids.New(ids.Person), "Grace Hopper", ids.New(ids.Team), "Facilities"
	kiosk.VisitorID, kiosk.VisitorEmail, kiosk.VisitorPhone, kiosk.VisitorCompany = ids.New(ids.Visitor), "v@example.org", "+441234", "Acme"
	kiosk.Type, kiosk.Source, kiosk.Audience = "meeting", "walk_in", "team"
	toTeam, toPerson, toDesk := kiosk, kiosk, kiosk
	toTeam.ID, toTeam.ForVisitID, toTeam.HostID, toTeam.HostName = ids.New(ids.Visit), pass, "", ""
	toTeam.Receiver, toTeam.ReceiverID = protocol.ToTeam, ids.New(ids.Team)
	toPerson.ID, toPerson.ForVisitID, toPerson.Receiver, toPerson.ReceiverID = ids.New(ids.Visit), pass, protocol.ToPerson, ids.New(ids.Person)
	toDesk.ID, toDesk.ForVisitID, toDesk.Receiver, toDesk.WaitingSince = ids.New(ids.Visit), pass, protocol.ToReception, nil
	ed := newEdit(&View{}, newInterner())
	put := func(v protocol.Visit) visitEntry {
		t.Helper()
		u, x, extra, err := ed.entry(&v)
		require.NoError(t, err)
		ed.putVisit(u, x, extra)
		x, ok := ed.visit(u)
		require.True(t, ok)
		return x
	}
	for _, v := range []protocol.Visit{full, bare, desk, entered, kiosk, toTeam, toPerson, toDesk} {
		x := put(v)
		u, _ := visitUID(v.ID)
		require.Equal(t, v, ed.v.visitOf(&x, v.ID, u))
	}
	// Returned gate lists are copies: changing one leaves the View alone.
	u, _ := visitUID(full.ID)
	e, _ := ed.visit(u)
	got := ed.v.visitOf(&e, full.ID, u)
	got.Rules.GateIDs[0] = "changed"
	require.Equal(t, gate, ed.v.visitOf(&e, full.ID, u).Rules.GateIDs[0])

	// Visits with the same gates share them: a site has few gates.
	other := full
	other.ID = ids.New(ids.Visit)
	e2 := put(other)
	require.NotZero(t, e.shared)
	require.Equal(t, e.shared, e2.shared)
	e3 := put(desk)
	require.Zero(t, e3.shared, "no gates, type, host or team: nothing shared to hold")
	require.Zero(t, e3.flags&flagExtra, "nothing rare: no extra")
	require.Equal(t, 6, ed.v.extras.len(), "full, kiosk, toTeam, toPerson, toDesk and other have extras")

	// A host's visits share one.
	k1, k2 := put(kiosk), put(toPerson)
	require.Equal(t, k1.shared, k2.shared)
	otherTeam := kiosk
	otherTeam.ID, otherTeam.ForVisitID, otherTeam.TeamID = ids.New(ids.Visit), kiosk.ID, ids.New(ids.Team)
	k3 := put(otherTeam)
	require.NotEqual(t, k1.shared, k3.shared)
	require.Same(t, ed.v.shared[k1.shared-1].host, ed.v.shared[k3.shared-1].host, "a host is one, whatever else its visits have")
}

// The visits that share a short code are found among many others, with no
// index of codes: the trie's hash takes only the code's bits, so they are
// in one leaf. The expected one comes first, else the newest.
func TestView_VisitByCodeShared(t *testing.T) {
	e := newFullEdit(newInterner())
	put := func(id, status string) {
		t.Helper()
		v := protocol.Visit{ID: id, Status: status, ForVisitID: id, Rules: protocol.Rules{GateIDs: []string{}}}
		u, x, extra, err := e.entry(&v)
		require.NoError(t, err)
		e.putVisit(u, x, extra)
	}
	for range 20_000 {
		put(ids.New(ids.Visit), string(passrule.CheckedOut))
	}
	u, _ := visitUID(ids.New(ids.Visit))
	older, newer, expected := u, u, u
	newer.hi++
	expected.hi--
	put(visitID(older), string(passrule.CheckedOut))
	put(visitID(newer), string(passrule.CheckedOut))
	code := ids.ShortCode(visitID(u))
	require.Equal(t, code, ids.ShortCode(visitID(newer)))
	v, err := e.done()
	require.NoError(t, err)

	got, ok := v.VisitByCode(code)
	require.True(t, ok)
	require.Equal(t, visitID(newer), got.ID, "none expected: the newest")

	e = newEdit(v, e.in)
	put(visitID(expected), string(passrule.Expected))
	v, err = e.done()
	require.NoError(t, err)
	got, ok = v.VisitByCode(code)
	require.True(t, ok)
	require.Equal(t, visitID(expected), got.ID, "the expected one first")

	other := u
	other.lo ^= 1 << 39 // another code
	_, ok = v.VisitByCode(ids.ShortCode(visitID(other)))
	require.False(t, ok)
}

// The visitors' text of visits whose visitor changed, or which went, is
// let go of: each write makes new text, and a View holds only the chunks
// its visits use, once a sweep has found the others. A View published
// before the sweep still reads its visitors.
func TestView_TextSwept(t *testing.T) {
	in := newInterner()
	v := &View{}
	visits := make([]string, 200)
	for i := range visits {
		visits[i] = ids.New(ids.Visit)
	}
	long := strings.Repeat("x", 4000) // 16 visitors a chunk: 13 chunks for the 200
	name := func(round, i int) string { return fmt.Sprintf("%d %d %s", round, i, long) }
	var first *View
	for round := range 40 {
		e := newEdit(v, in)
		for i, id := range visits {
			if round == 39 && i%2 == 1 {
				u, _ := visitUID(id)
				e.deleteVisit(u)
				continue
			}
			p := protocol.Visit{ID: id, Status: string(passrule.Expected), ForVisitID: id,
				Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: name(round, i)}
			u, x, extra, err := e.entry(&p)
			require.NoError(t, err)
			e.putVisit(u, x, extra)
		}
		var err error
		v, err = e.done()
		require.NoError(t, err)
		if first == nil {
			first = v
		}
	}
	held := 0
	for _, c := range v.text {
		if c != nil {
			held++
		}
	}
	// 520 chunks were made; the 100 visits left use 7, the 200 of the
	// round before 13, and a sweep waits for 8 new ones.
	require.LessOrEqual(t, held, 7+13+8)
	for i, id := range visits {
		got, ok := v.Visit(id)
		require.Equal(t, i%2 == 0, ok)
		if ok {
			require.Equal(t, name(39, i), got.VisitorName)
		}
		got, ok = first.Visit(id)
		require.True(t, ok)
		require.Equal(t, name(0, i), got.VisitorName)
	}
}
