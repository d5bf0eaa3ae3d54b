package cache_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// walkIn is a walk-in visit made at the desk for a team, checked in and
// waiting, and its fact.
func walkIn(team protocol.Team, name string, at time.Time) (protocol.Visit, protocol.Fact) {
	id := ids.New(ids.Visit)
	v := protocol.Visit{ID: id, Status: string(passrule.CheckedIn), ForVisitID: id, CheckedInAt: &at, Uses: 1,
		Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: name, Type: "meeting", Source: "walk_in", Audience: "team",
		TeamID: team.ID, TeamName: team.Name, NeedsSomeone: true, WaitingSince: &at, VisitorEmail: "vera@example.com"}
	f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactWalkIn, At: at, VisitID: id, DeviceID: "kiosk-1",
		WalkIn: &protocol.WalkIn{Type: "meeting", TeamID: team.ID, Visitor: protocol.WalkInVisitor{Name: name, Email: "vera@example.com"}}}
	return v, f
}

// A kiosk write is a visit and its fact in one transaction: the View shows
// the visit in the queue and on site at once, pending; the outbox holds
// the fact; both survive a reopen; the acknowledgement ends pending.
func TestRecord_KioskWalkIn(t *testing.T) {
	c, path := newCache(t)
	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales", VisitorsCanChoose: true}
	apply(t, c, 1, team, protocol.VisitType{Key: "meeting", Name: "Meeting", Enabled: true})
	v, f := walkIn(team, "Élodie Müller", t0)
	stored := record(t, c, f, v)

	check := func(c *cache.Cache) {
		t.Helper()
		view := c.View()
		w := view.Waiting()
		require.Len(t, w, 1)
		want := normalized(v)
		want.AtDesk = true // a walk-in came in at the desk: the entrance lets them through once
		require.Equal(t, want, w[0])
		require.Len(t, view.OnSite(), 1)
		require.True(t, view.Pending(v.ID))
		got, ok := view.VisitByCode(ids.ShortCode(v.ID))
		require.True(t, ok)
		require.Equal(t, v.ID, got.ID)
		require.Len(t, view.VisitsByVisitorName("elodie  MULLER"), 1, "case, accents and spaces do not count")
		out, err := c.Outbox(0)
		require.NoError(t, err)
		require.Equal(t, []protocol.Fact{stored}, out)
		require.Equal(t, []protocol.Team{team}, view.Teams(""))
	}
	check(c)
	c = reopen(t, c, path)
	check(c)

	ack(t, c, stored.ID)
	require.False(t, c.View().Pending(v.ID))
	// Taken: out of the queue, still on site.
	taken := v
	taken.HostID, taken.HostName, taken.NeedsSomeone = ids.New(ids.Person), "Ada Lovelace", false
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactTake, At: t0.Add(time.Minute), VisitID: v.ID,
		DeviceID: "kiosk-1", PersonID: taken.HostID}, taken)
	require.Empty(t, c.View().Waiting())
	require.Len(t, c.View().OnSite(), 1)
	// A stale cloud version from before the take does not put it back in
	// the queue while the take waits.
	apply(t, c, 3, v)
	require.Empty(t, c.View().Waiting())
	got, _ := c.View().Visit(v.ID)
	require.Equal(t, taken.HostID, got.HostID)
	// Checked out: off site.
	out := taken
	out.Status, out.CheckedOutAt = string(passrule.CheckedOut), ptr(t0.Add(time.Hour))
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckOut, At: t0.Add(time.Hour), VisitID: v.ID,
		DeviceID: "kiosk-1"}, out)
	require.Empty(t, c.View().OnSite())
}

// A visit stays pending through the cloud's writes of it, a change and
// a snapshot that has it or lacks it, until the acknowledgement of its
// fact: the mark is kept in the visit's entry, which those writes replace.
func TestView_PendingThroughCloudWrites(t *testing.T) {
	c, _ := newCache(t)
	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales"}
	v1, f1 := walkIn(team, "Ada", t0)
	v2, f2 := walkIn(team, "Grace", t0)
	stored1, stored2 := record(t, c, f1, v1), record(t, c, f2, v2)
	require.True(t, c.View().Pending(v1.ID))

	changed := v1
	changed.VisitorPhone = "+44 20 7946 0000"
	apply(t, c, 1, changed)
	require.Equal(t, changed.VisitorPhone, visitOf(t, c, v1.ID).VisitorPhone, "the cloud's change is taken")
	require.True(t, c.View().Pending(v1.ID), "still pending after the cloud's change")

	require.NoError(t, c.ReplaceSnapshot(snapshot(9, 1, &protocol.Settings{Timezone: "UTC"}, nil, nil, []protocol.Visit{v1})))
	require.True(t, c.View().Pending(v1.ID), "pending after a snapshot that has it")
	require.True(t, c.View().Pending(v2.ID), "pending after a snapshot that lacks it")

	ack(t, c, stored1.ID)
	require.False(t, c.View().Pending(v1.ID))
	require.True(t, c.View().Pending(v2.ID))
	ack(t, c, stored2.ID)
	require.False(t, c.View().Pending(v2.ID))
}

// The waiting queue is oldest first; a snapshot keeps the teams and types
// it carries and replaces the rest.
func TestView_KioskQueueAndSnapshot(t *testing.T) {
	c, _ := newCache(t)
	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales"}
	v1, f1 := walkIn(team, "B", t0.Add(2*time.Minute))
	v2, f2 := walkIn(team, "A", t0)
	record(t, c, f1, v1)
	record(t, c, f2, v2)
	w := c.View().Waiting()
	require.Equal(t, []string{v2.ID, v1.ID}, []string{w[0].ID, w[1].ID})
	on := c.View().OnSite()
	require.Equal(t, []string{v2.ID, v1.ID}, []string{on[0].ID, on[1].ID}, "by name")

	snap := snapshot(9, 1, &protocol.Settings{Timezone: "UTC", SiteName: "HQ", WaitLimitMinutes: 15}, nil, nil, nil)
	snap[0].Teams = []protocol.Team{team, {ID: ids.New(ids.Team), Name: "Old", Archived: true}}
	snap[0].VisitTypes = []protocol.VisitType{{Key: "b", Name: "B", Enabled: true}, {Key: "a", Name: "A", Enabled: true}, {Key: "c", Name: "Off"}}
	require.NoError(t, c.ReplaceSnapshot(snap))
	view := c.View()
	require.Len(t, view.Waiting(), 2, "visits made here and still pending stay")
	require.Equal(t, []protocol.Team{team}, view.Teams(""), "archived teams are not offered")
	types := view.VisitTypes()
	require.Equal(t, []string{"a", "b"}, []string{types[0].Key, types[1].Key})
	s, _ := view.Settings()
	require.Equal(t, "HQ", s.SiteName)
}

// Person search: word prefixes, folded, at least 2 letters, active only,
// first names first.
func TestView_SearchPeople(t *testing.T) {
	c, _ := newCache(t)
	people := []protocol.Person{
		{ID: ids.New(ids.Person), Name: "Ada Lovelace", Active: true, JobTitle: "Engineer"},
		{ID: ids.New(ids.Person), Name: "Adèle Zola", Active: true},
		{ID: ids.New(ids.Person), Name: "Grace Adams", Active: true},
		{ID: ids.New(ids.Person), Name: "Adam Gone", Active: false},
	}
	objs := make([]any, len(people))
	for i := range people {
		objs[i] = people[i]
	}
	apply(t, c, 1, objs...)
	names := func(ps []protocol.Person) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	v := c.View()
	require.Equal(t, []string{"Ada Lovelace", "Adèle Zola", "Grace Adams"}, names(v.SearchPeople("AD", 10)))
	require.Equal(t, []string{"Adèle Zola"}, names(v.SearchPeople("adele", 10)))
	require.Equal(t, []string{"Ada Lovelace"}, names(v.SearchPeople("lov ad", 10)))
	require.Empty(t, v.SearchPeople("a", 10), "one letter finds nobody")
	require.Len(t, v.SearchPeople("ad", 1), 1)
	require.Equal(t, "Engineer", v.SearchPeople("lovelace", 1)[0].JobTitle)
}

// BenchmarkKioskSearch: a person search, the waiting queue, a short code
// and a visitor's name with 100,000 visits (500 of them waiting) and
// 10,000 people.
func BenchmarkKioskSearch(b *testing.B) {
	c, _ := newCache(b)
	first := []string{"Ada", "Grace", "Alan", "Élodie", "Søren", "Zoë", "Mary", "John", "Ana María", "Li"}
	last := []string{"Lovelace", "Hopper", "Turing", "Müller", "Kierkegaard", "Smith", "Jones", "García", "Wang", "Adams"}
	var snap protocol.Snapshot
	snap.Seq, snap.Part, snap.Parts = 1, 1, 1
	for i := range 10000 {
		snap.People = append(snap.People, protocol.Person{ID: ids.New(ids.Person),
			Name: fmt.Sprintf("%s %s%d", first[i%10], last[(i/10)%10], i/100), Active: true})
	}
	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales"}
	for i := range 100000 {
		v := newVisit()
		if i%200 == 0 {
			w, _ := walkIn(team, fmt.Sprintf("Visitor %d", i), t0.Add(time.Duration(i)*time.Second))
			v = w
		}
		snap.Visits = append(snap.Visits, v)
	}
	parts := splitForTest(snap)
	require.NoError(b, c.ReplaceSnapshot(parts))
	v := c.View()
	require.Len(b, v.Waiting(), 500)
	b.Run("people", func(b *testing.B) {
		qs := []string{"ad", "gra", "mül", "kierk", "zoe", "ana mar", "sm", "li"}
		for i := 0; b.Loop(); i++ {
			_ = v.SearchPeople(qs[i%len(qs)], 10)
		}
	})
	b.Run("queue", func(b *testing.B) {
		for b.Loop() {
			_ = v.Waiting()
		}
	})
	b.Run("code", func(b *testing.B) {
		code := ids.ShortCode(snap.Visits[777].ID)
		for b.Loop() {
			_, _ = v.VisitByCode(code)
		}
	})
	b.Run("visitor", func(b *testing.B) {
		name := snap.Visits[800].VisitorName // a walk-in, the only one of that name
		for b.Loop() {
			if len(v.VisitsByVisitorName(name)) == 0 {
				b.Fatal("no visit of", name)
			}
		}
	})
}

// splitForTest cuts a snapshot into parts of at most MaxSnapshot objects
// of a kind.
func splitForTest(s protocol.Snapshot) []protocol.Snapshot {
	var parts []protocol.Snapshot
	for i := 0; i < max(len(s.Visits), len(s.People)); i += protocol.MaxSnapshot {
		p := protocol.Snapshot{Seq: s.Seq, Gates: []protocol.Gate{}, Keys: []protocol.Key{}}
		p.Visits = s.Visits[min(i, len(s.Visits)):min(i+protocol.MaxSnapshot, len(s.Visits))]
		p.People = s.People[min(i, len(s.People)):min(i+protocol.MaxSnapshot, len(s.People))]
		parts = append(parts, p)
	}
	for i := range parts {
		parts[i].Part, parts[i].Parts = i+1, len(parts)
	}
	return parts
}

// A visit type whose form is larger than a page is stored on overflow
// pages, and the file still opens: Open's own page reader kept the first
// page of a value when it grew its buffer for the overflow pages only
// from this test on.
func TestOpen_ValueOnOverflowPages(t *testing.T) {
	c, path := newCache(t)
	form := json.RawMessage(`{"title":"` + strings.Repeat("x", 9000) + `"}`)
	snap := snapshot(3, 10, &protocol.Settings{Timezone: "UTC"}, nil, nil, nil)
	snap[0].VisitTypes = []protocol.VisitType{{Key: "a", Name: "A", Enabled: true, Form: form}}
	require.NoError(t, c.ReplaceSnapshot(snap))
	c = reopen(t, c, path)
	got, ok := c.View().VisitType("a")
	require.True(t, ok)
	require.JSONEq(t, string(form), string(got.Form))
}
