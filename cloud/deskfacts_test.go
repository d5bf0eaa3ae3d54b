package cloud_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// deskFact is a fact of the env's edge at its kiosk, made at the desk a
// minute before now (it reaches the cloud late).
func (e *edgeEnv) deskFact(kind protocol.FactKind, visitID string) protocol.Fact {
	e.counter++
	return protocol.Fact{ID: ids.New(ids.Fact), Kind: kind, EdgeID: e.edge.ID, Counter: e.counter,
		At: e.clock.Now().Add(-time.Minute), DeviceID: "kiosk-1", VisitID: visitID}
}

// walkIn is a walk-in fact for a new visitor, for the host or team given
// (neither: the desk).
func (e *edgeEnv) walkIn(hostID, teamID string) protocol.Fact {
	f := e.deskFact(protocol.FactWalkIn, ids.New(ids.Visit))
	f.WalkIn = &protocol.WalkIn{Type: "meeting", HostID: hostID, TeamID: teamID,
		Visitor: protocol.WalkInVisitor{Name: "Vera Walker", Email: "vera@example.com", Company: "Initech"}}
	return f
}

// applyTwice applies f, then delivers it again alone and in a batch with
// itself, and checks the second and third deliveries change nothing.
func (e *edgeEnv) applyTwice(t *testing.T, f protocol.Fact) {
	t.Helper()
	require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
	head := e.head(t)
	e.clock.Advance(time.Second)
	require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
	errs, err := e.svc.ApplyFacts(t.Context(), e.site, []protocol.Fact{f, f})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)
	require.Equal(t, head, e.head(t), "a fact applied before writes nothing")
}

// events returns the types of the events about an object, oldest first,
// and the events.
func (e *edgeEnv) events(t *testing.T, objectID string) ([]string, []cloud.Event) {
	t.Helper()
	evs, _, err := e.svc.Events(t.Context(), e.actor, cloud.EventFilter{ObjectID: objectID}, cloud.Page{Limit: 100})
	require.NoError(t, err)
	slices.Reverse(evs)
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	return types, evs
}

func (e *edgeEnv) messages(t *testing.T, visitID string) []cloud.Message {
	t.Helper()
	ms, _, err := e.store.ListMessages(t.Context(), e.tenant, cloud.MessageFilter{VisitID: visitID}, cloud.Page{Limit: 100})
	require.NoError(t, err)
	return ms
}

// arrivals are the visit's "your visitor has arrived" notices.
func arrivals(ms []cloud.Message) []cloud.Message {
	var out []cloud.Message
	for _, m := range ms {
		if m.Subject == "Your visitor has arrived" {
			out = append(out, m)
		}
	}
	return out
}

func (e *edgeEnv) person(t *testing.T, id string) cloud.Person {
	t.Helper()
	p, err := e.store.Person(t.Context(), e.tenant, id)
	require.NoError(t, err)
	return p
}

// detailOf decodes an audit event's detail.
func detailOf(t *testing.T, ev cloud.AuditEvent) map[string]any {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(ev.Detail, &d))
	return d
}

// Each desk fact is applied once however often it is delivered, at the
// desk's time, firing the API's events once: a walk-in for a team is made
// checked in (visit.created, visit.checked_in, pass.sent) with its
// visitor, pass and the team told; a take gives it its lead host
// (visit.handed_over, the event a change of hosts fires); a check-out at
// the desk ends it (visit.checked_out). An expected visit checked in at
// the desk is visit.checked_in; a walk-in for the desk handed over to a
// team is visit.handed_over with the team told.
func TestApplyFacts_DeskFactsOnce(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.svc.SetEventRenderer(httpapi.RenderEvent)
		team := e.live.Teams[1] // Customer Support, at London
		taker := e.person(t, e.live.People[0])

		walk := e.walkIn("", team)
		before := e.head(t)
		e.applyTwice(t, walk)
		v := e.get(t, walk.VisitID)
		require.Equal(t, cloud.VisitCheckedIn, v.Status)
		require.Equal(t, cloud.SourceWalkIn, v.Source)
		require.True(t, walk.At.Equal(*v.CheckedInAt), "checked in at the desk's time")
		require.True(t, walk.At.Equal(*v.WaitingSince))
		require.Equal(t, e.site.SiteID, v.SiteID)
		require.Equal(t, cloud.AudienceTeam, v.Audience)
		require.Equal(t, team, v.Team.ID)
		require.Equal(t, cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: team}, v.Receiver)
		require.True(t, v.NeedsSomeone)
		require.Equal(t, "Vera Walker", v.Visitor.Name)
		require.Equal(t, "Initech", v.Visitor.Company)
		require.Equal(t, cloud.Pass{Channels: []string{cloud.ChannelEmail}, LastSentAt: v.Pass.LastSentAt,
			Rules: v.Pass.Rules, ForVisitID: v.ID, Uses: 1}, v.Pass, "the cloud's pass, sent as the API sends it")
		require.Empty(t, e.recorded(t, walk.ID).Conflict)
		cs := e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, cloud.EdgeVisit(v), *cs[0].Visit, "the cloud's visit goes out on the feed")
		ms := e.messages(t, v.ID)
		require.Len(t, ms, 2, "the pass and the team's notice, once")
		told := arrivals(ms)
		require.Len(t, told, 1)
		require.Equal(t, team, told[0].To)
		types, evs := e.events(t, v.ID)
		require.Equal(t, []string{cloud.EventVisitCreated, cloud.EventVisitCheckedIn, cloud.EventPassSent}, types)
		var data struct {
			Source      string `json:"source"`
			CheckedInAt string `json:"checked_in_at"`
		}
		require.NoError(t, json.Unmarshal(evs[1].Data, &data))
		require.Equal(t, "walk_in", data.Source)
		require.Equal(t, walk.At.UTC().Format("2006-01-02T15:04:05.000Z"), data.CheckedInAt, "the desk's time")

		e.clock.Advance(time.Minute)
		take := e.deskFact(protocol.FactTake, v.ID)
		take.PersonID = taker.ID
		e.applyTwice(t, take)
		v = e.get(t, v.ID)
		require.Equal(t, taker.ID, v.HostID)
		require.False(t, v.NeedsSomeone)
		require.Len(t, v.Hosts, 1)
		require.Equal(t, cloud.HostRoleLead, v.Hosts[0].Role)
		require.Equal(t, taker.Name, v.Hosts[0].Name)
		require.Empty(t, e.recorded(t, take.ID).Conflict)
		types, _ = e.events(t, v.ID)
		require.Equal(t, []string{cloud.EventVisitHandedOver}, types[3:])

		e.clock.Advance(time.Hour)
		out := e.deskFact(protocol.FactDeskCheckOut, v.ID)
		e.applyTwice(t, out)
		v = e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedOut, v.Status)
		require.True(t, out.At.Equal(*v.CheckedOutAt))
		types, _ = e.events(t, v.ID)
		require.Equal(t, []string{cloud.EventVisitCheckedOut}, types[4:])

		expected := e.visit(t)
		e.clock.Advance(time.Minute)
		in := e.deskFact(protocol.FactDeskCheckIn, expected.ID)
		in.PassVisitID = expected.ID
		e.applyTwice(t, in)
		got := e.get(t, expected.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.True(t, in.At.Equal(*got.CheckedInAt))
		require.Equal(t, 1, got.Pass.Uses)
		require.Empty(t, got.GateID, "at the desk, no gate")
		require.Empty(t, e.recorded(t, in.ID).Conflict)
		types, _ = e.events(t, expected.ID)
		require.Equal(t, []string{cloud.EventVisitCheckedIn}, types[len(types)-1:])
		require.Equal(t, 1, countOf(types, cloud.EventVisitCheckedIn))
		require.Empty(t, arrivals(e.messages(t, expected.ID)), "a visit for reception tells no one: the visitor is there")

		desk := e.walkIn("", "")
		e.applyTwice(t, desk)
		require.Equal(t, cloud.AudienceDesk, e.get(t, desk.VisitID).Audience)
		require.Empty(t, arrivals(e.messages(t, desk.VisitID)))
		e.clock.Advance(time.Minute)
		hand := e.deskFact(protocol.FactHandOver, desk.VisitID)
		hand.To, hand.TeamID = protocol.ToTeam, team
		e.applyTwice(t, hand)
		got = e.get(t, desk.VisitID)
		require.Equal(t, cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: team}, got.Receiver)
		require.Equal(t, team, got.Team.ID, "a visit for the desk takes the team receiving it")
		require.True(t, hand.At.Equal(*got.WaitingSince), "waiting for the team from the desk's hand-over")
		require.Empty(t, e.recorded(t, hand.ID).Conflict)
		types, _ = e.events(t, desk.VisitID)
		require.Equal(t, []string{cloud.EventVisitHandedOver}, types[len(types)-1:])
		require.Equal(t, 1, countOf(types, cloud.EventVisitHandedOver))
		var passed []cloud.Message
		for _, m := range e.messages(t, desk.VisitID) {
			if m.Subject == "A visitor has been passed to you" {
				passed = append(passed, m)
			}
		}
		require.Len(t, passed, 1, "the API's hand-over notice, once")
		require.Equal(t, team, passed[0].To)
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// Host told: a walk-in for a person, and an expected visit for a person
// checked in at the desk, tell the host once (an email: the seeded people
// have addresses), and mark them notified at the desk's time.
func TestApplyFacts_HostToldOnce(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		host := e.person(t, e.live.People[0])
		walk := e.walkIn(host.ID, "")
		e.applyTwice(t, walk)
		v := e.get(t, walk.VisitID)
		require.Equal(t, cloud.AudiencePerson, v.Audience)
		require.False(t, v.NeedsSomeone)
		require.Equal(t, cloud.HostStateNotified, v.Hosts[0].State)
		require.True(t, walk.At.Equal(*v.Hosts[0].AskedAt))
		told := arrivals(e.messages(t, v.ID))
		require.Len(t, told, 1)
		require.Equal(t, cloud.ChannelEmail, told[0].Channel)
		require.Equal(t, host.Email, told[0].To)
		require.Contains(t, told[0].Body, "Vera Walker has arrived at London HQ")

		at := e.clock.Now()
		expected, err := e.svc.CreateVisit(t.Context(), e.actor, cloud.VisitInput{
			SiteID: cloud.Some(e.site.SiteID), Type: cloud.Some("meeting"), ExpectedAt: cloud.Some(&at), HostID: cloud.Some(host.ID),
			Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ivo Invited")}),
		})
		require.NoError(t, err)
		require.Empty(t, arrivals(e.messages(t, expected.ID)))
		e.clock.Advance(time.Minute)
		in := e.deskFact(protocol.FactDeskCheckIn, expected.ID)
		e.applyTwice(t, in)
		told = arrivals(e.messages(t, expected.ID))
		require.Len(t, told, 1)
		require.Equal(t, host.Email, told[0].To)
		require.Equal(t, cloud.HostStateNotified, e.get(t, expected.ID).Hosts[0].State)

		// A gate's check-in tells no one: only the desk does.
		gated, err := e.svc.CreateVisit(t.Context(), e.actor, cloud.VisitInput{
			SiteID: cloud.Some(e.site.SiteID), Type: cloud.Some("meeting"), ExpectedAt: cloud.Some(&at), HostID: cloud.Some(host.ID),
			Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Gil Gate")}),
		})
		require.NoError(t, err)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, e.fact(protocol.FactCheckIn, gated.ID)))
		require.Empty(t, arrivals(e.messages(t, gated.ID)))
	})
}

// A walk-in the API would refuse now (its team archived since the desk
// offered it, an answer the form refuses) is made all the same, as the
// desk made it, and flagged walk_in_unvalidated with the API's problems in
// the audit trail; its pass is not sent.
func TestApplyFact_WalkInUnvalidated(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		team := e.live.Teams[1]
		_, err := e.svc.UpdateTeam(t.Context(), e.tenant, team, cloud.TeamInput{Archived: cloud.Some(true)})
		require.NoError(t, err)
		walk := e.walkIn("", team)
		walk.WalkIn.CustomFields = map[string]json.RawMessage{"no_such_question": json.RawMessage(`"x"`)}
		e.applyTwice(t, walk)

		v := e.get(t, walk.VisitID)
		require.Equal(t, cloud.VisitCheckedIn, v.Status, "the visitor is in the building")
		require.Equal(t, cloud.SourceWalkIn, v.Source)
		require.Equal(t, team, v.Team.ID, "for the team the desk chose")
		require.Equal(t, cloud.AudienceTeam, v.Audience)
		require.True(t, v.NeedsSomeone)
		require.JSONEq(t, `"x"`, string(v.CustomFields["no_such_question"]), "the answers as given")
		require.Nil(t, v.Pass.LastSentAt)
		require.Equal(t, v.ID, v.Pass.ForVisitID)
		require.Equal(t, cloud.ConflictWalkInUnvalidated, e.recorded(t, walk.ID).Conflict)

		evs := e.conflicts(t, v.ID)
		require.Len(t, evs, 1, "audited once")
		d := detailOf(t, evs[0])
		require.Equal(t, cloud.ConflictWalkInUnvalidated, d["conflict"])
		require.Equal(t, "walk_in", d["kind"])
		require.Equal(t, "kiosk-1", d["device_id"])
		require.NotContains(t, d, "gate_id")
		problems, _ := json.Marshal(d["problems"])
		require.JSONEq(t, `[{"field":"team_id","message":"the team is archived"},
			{"field":"custom_fields.no_such_question","message":"is not a question of this form"}]`, string(problems))
	})
}

// A take racing a hand-over in the cloud: the desk took the visit while
// the site was offline, the cloud handed it over to reception later; the
// take stands (the person is with the visitor), flagged taken_elsewhere
// and audited, and the feed carries the visit as the cloud now has it, so
// the edge converges. A take of a visit the cloud has cancelled is ended:
// no host, and the feed carries the cancellation.
func TestApplyFact_TakeRacesCloud(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		team := e.live.Teams[1]
		taker := e.person(t, e.live.People[0])
		walk := e.walkIn("", team)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, walk))
		e.clock.Advance(time.Minute)
		take := e.deskFact(protocol.FactTake, walk.VisitID) // taken at the desk a minute ago...
		take.PersonID = taker.ID
		e.clock.Advance(time.Second)
		_, err := e.svc.HandOver(t.Context(), e.actor, walk.VisitID, cloud.HandOverInput{To: cloud.Some(cloud.ReceiverReception)})
		require.NoError(t, err, "...and handed over in the cloud since")
		before := e.head(t)
		e.applyTwice(t, take)

		v := e.get(t, walk.VisitID)
		require.Equal(t, taker.ID, v.HostID, "the desk's take stands")
		require.False(t, v.NeedsSomeone)
		require.Equal(t, cloud.ConflictTakenElsewhere, e.recorded(t, take.ID).Conflict)
		evs := e.conflicts(t, v.ID)
		require.Len(t, evs, 1)
		require.Equal(t, cloud.ConflictTakenElsewhere, detailOf(t, evs[0])["conflict"])
		cs := e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, cloud.EdgeVisit(v), *cs[0].Visit)
		require.Equal(t, taker.ID, cs[0].Visit.HostID)
		require.False(t, cs[0].Visit.NeedsSomeone)
		_, err = e.svc.HandOver(t.Context(), e.actor, v.ID, cloud.HandOverInput{To: cloud.Some(cloud.ReceiverReception)})
		require.ErrorIs(t, err, cloud.ErrInvalidState, "taken now: the API's rule")

		// Someone else took it in the cloud: the desk's take still stands,
		// the other host kept as a co-host.
		other := e.person(t, e.live.People[1])
		second := e.deskFact(protocol.FactTake, v.ID)
		second.PersonID = other.ID
		e.applyTwice(t, second)
		v = e.get(t, v.ID)
		require.Equal(t, other.ID, v.HostID)
		require.Equal(t, []string{other.ID, taker.ID}, []string{v.Hosts[0].ID, v.Hosts[1].ID})
		require.Equal(t, cloud.HostRoleCoHost, v.Hosts[1].Role)
		require.Equal(t, cloud.ConflictTakenElsewhere, e.recorded(t, second.ID).Conflict)

		cancelled := e.visit(t)
		_, err = e.svc.Cancel(t.Context(), e.actor, cancelled.ID)
		require.NoError(t, err)
		before = e.head(t)
		late := e.deskFact(protocol.FactTake, cancelled.ID)
		late.PersonID = taker.ID
		e.applyTwice(t, late)
		got := e.get(t, cancelled.ID)
		require.Equal(t, cloud.VisitCancelled, got.Status)
		require.Empty(t, got.HostID)
		require.Empty(t, got.Hosts)
		require.Equal(t, cloud.ConflictEnded, e.recorded(t, late.ID).Conflict)
		cs = e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, "cancelled", cs[0].Visit.Status)
	})
}

// A hand-over at the desk of a visit that has a host in the cloud is the
// API's refusal: recorded as has_host, audited, not applied, nobody told,
// and the feed carries the cloud's version. A hand-over to a team
// archived since is invalid_receiver, with the API's words.
func TestApplyFact_HandOverRefused(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		host := e.person(t, e.live.People[0])
		walk := e.walkIn(host.ID, "")
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, walk))
		messages := len(e.messages(t, walk.VisitID))
		before := e.head(t)
		hand := e.deskFact(protocol.FactHandOver, walk.VisitID)
		hand.To, hand.TeamID = protocol.ToTeam, e.live.Teams[1]
		e.applyTwice(t, hand)

		v := e.get(t, walk.VisitID)
		require.Equal(t, host.ID, v.HostID)
		require.Empty(t, v.Receiver)
		require.Equal(t, cloud.ConflictHasHost, e.recorded(t, hand.ID).Conflict)
		evs := e.conflicts(t, v.ID)
		require.Len(t, evs, 1)
		d := detailOf(t, evs[0])
		require.Equal(t, cloud.ConflictHasHost, d["conflict"])
		require.Equal(t, "hand_over", d["kind"])
		require.Len(t, e.messages(t, v.ID), messages, "nobody told")
		cs := e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, cloud.EdgeVisit(v), *cs[0].Visit)

		desk := e.walkIn("", "")
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, desk))
		_, err := e.svc.UpdateTeam(t.Context(), e.tenant, e.live.Teams[1], cloud.TeamInput{Archived: cloud.Some(true)})
		require.NoError(t, err)
		toArchived := e.deskFact(protocol.FactHandOver, desk.VisitID)
		toArchived.To, toArchived.TeamID = protocol.ToTeam, e.live.Teams[1]
		e.applyTwice(t, toArchived)
		got := e.get(t, desk.VisitID)
		require.Equal(t, cloud.Receiver{Kind: cloud.ReceiverReception}, got.Receiver)
		require.Equal(t, cloud.ConflictInvalidReceiver, e.recorded(t, toArchived.ID).Conflict)
		problems, _ := json.Marshal(detailOf(t, e.conflicts(t, desk.VisitID)[0])["problems"])
		require.JSONEq(t, `[{"field":"team_id","message":"the team is archived"}]`, string(problems))
	})
}

// A desk fact about a walk-in that has not arrived is refused unrecorded
// (ErrFactEarly), so the edge sends it again; in a batch after its walk-in
// it applies, and so it does when sent again after it.
func TestApplyFacts_DeskFactBeforeItsWalkIn(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		taker := e.person(t, e.live.People[0])
		walk := e.walkIn("", e.live.Teams[1])
		take := e.deskFact(protocol.FactTake, walk.VisitID)
		take.PersonID = taker.ID
		err := e.svc.ApplyFact(t.Context(), e.site, take)
		require.ErrorIs(t, err, cloud.ErrFactEarly)
		require.ErrorIs(t, err, cloud.ErrEdgeRejected, "not acknowledged: the edge sends it again")
		_, err = e.store.EdgeFact(t.Context(), e.tenant, take.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound)

		errs, err := e.svc.ApplyFacts(t.Context(), e.site, []protocol.Fact{walk, take})
		require.NoError(t, err)
		require.Equal(t, []error{nil, nil}, errs)
		require.Equal(t, taker.ID, e.get(t, walk.VisitID).HostID)
		require.Empty(t, e.recorded(t, take.ID).Conflict)

		walk2 := e.walkIn("", "")
		out := e.deskFact(protocol.FactDeskCheckOut, walk2.VisitID)
		errs, err = e.svc.ApplyFacts(t.Context(), e.site, []protocol.Fact{out, walk2})
		require.NoError(t, err)
		require.ErrorIs(t, errs[0], cloud.ErrFactEarly)
		require.NoError(t, errs[1])
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out), "sent again after its walk-in")
		require.Equal(t, cloud.VisitCheckedOut, e.get(t, walk2.VisitID).Status)
	})
}

// A returning visitor's record is the walk-in's visitor; a visitor ID
// that is not the organisation's is a new record from what was typed.
func TestApplyFact_WalkInReturningVisitor(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		first := e.visit(t)
		walk := e.walkIn("", "")
		walk.WalkIn.VisitorID = first.VisitorID
		walk.WalkIn.Visitor = protocol.WalkInVisitor{Name: "Ada Lovelace"}
		e.applyTwice(t, walk)
		require.Equal(t, first.VisitorID, e.get(t, walk.VisitID).VisitorID)

		stranger := e.walkIn("", "")
		stranger.WalkIn.VisitorID = ids.New(ids.Visitor)
		stranger.WalkIn.Visitor = protocol.WalkInVisitor{Name: "Sam Stranger"}
		e.applyTwice(t, stranger)
		got := e.get(t, stranger.VisitID)
		require.NotEqual(t, stranger.WalkIn.VisitorID, got.VisitorID)
		require.Equal(t, "Sam Stranger", got.Visitor.Name)
		require.Empty(t, e.recorded(t, stranger.ID).Conflict)
	})
}
