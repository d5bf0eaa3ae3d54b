package edge

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// deskSite is a site's cache as the cloud filled it, with the kiosk's
// store on it: a person, a team visitors may choose, the meeting type, and
// an invited visit expected now.
type deskSite struct {
	c       *cache.Cache
	k       *kioskStore
	key     passtoken.Key
	siteID  string
	host    protocol.Person
	team    protocol.Team
	invited protocol.Visit
	now     time.Time
	sent    int
}

func newDeskSite(t *testing.T) *deskSite {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"), cache.Options{EdgeID: ids.New(ids.Edge)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	key, err := passtoken.NewKey(nil)
	require.NoError(t, err)
	d := &deskSite{c: c, key: key, siteID: ids.New(ids.Site), now: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC),
		host: protocol.Person{ID: ids.New(ids.Person), Name: "Grace Hopper", Active: true, JobTitle: "Rear admiral"},
		team: protocol.Team{ID: ids.New(ids.Team), Name: "Facilities", VisitorsCanChoose: true}}
	at, until := d.now.Add(-time.Hour), d.now.Add(8*time.Hour)
	d.invited = protocol.Visit{ID: ids.New(ids.Visit), Status: string(passrule.Expected), ExpectedAt: &at, ExpectedUntil: &until,
		Rules: protocol.Rules{GateIDs: []string{ids.New(ids.Gate)}}, VisitorName: "Alan Turing", HostID: d.host.ID,
		HostName: d.host.Name, Audience: "person", Type: "meeting", Source: "invitation"}
	d.invited.ForVisitID = d.invited.ID
	pub := key.Public()
	objs := []protocol.Change{
		{Settings: &protocol.Settings{Timezone: "Europe/London", SiteName: "Harbour Office", WaitLimitMinutes: 15}},
		{Key: &protocol.Key{ID: pub.ID, Public: pub.Key}},
		{Person: &d.host},
		{Team: &d.team},
		{VisitType: &protocol.VisitType{Key: "meeting", Name: "Meeting", Enabled: true}},
		{VisitType: &protocol.VisitType{Key: "interview", Name: "Interview"}},
		{Visit: &d.invited},
	}
	for i := range objs {
		objs[i].Seq, objs[i].At = uint64(i+1), d.now
	}
	_, err = c.Apply(objs)
	require.NoError(t, err)
	d.k = &kioskStore{c: c, siteID: d.siteID, notify: func() { d.sent++ }, log: func(string, ...any) {}, now: func() time.Time { return d.now }}
	return d
}

func (d *deskSite) outbox(t *testing.T) []protocol.Fact {
	t.Helper()
	out, err := d.c.Outbox(0)
	require.NoError(t, err)
	return out
}

func (d *deskSite) desk() kiosk.Desk {
	return kiosk.Desk{DeviceID: "kiosk_01jdq7n4ybfzrt6k5m8c1qx2va", At: d.now}
}

func TestKioskStore_WalkInForTeamThenTakeAndCheckOut(t *testing.T) {
	d := newDeskSite(t)
	ctx := context.Background()
	in := kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, TeamID: d.team.ID, Type: "meeting", DeviceID: d.desk().DeviceID,
		Visitor: kiosk.Visitor{Name: "Ada Lovelace", Phone: "+447700900123", Company: "Engines"}}
	v, err := d.k.WalkIn(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "checked_in", v.Status)
	require.True(t, v.NeedsSomeone)
	require.True(t, v.Pending, "the host is not told until the cloud has the fact")
	require.Equal(t, &kiosk.Ref{ID: d.team.ID, Name: "Facilities"}, v.Team)

	again, err := d.k.WalkIn(ctx, in)
	require.NoError(t, err)
	require.Equal(t, v.ID, again.ID)
	facts := d.outbox(t)
	require.Len(t, facts, 1, "a retried submit makes one fact")
	f := facts[0]
	require.Equal(t, protocol.FactWalkIn, f.Kind)
	require.Equal(t, in.ID, f.VisitID)
	require.Equal(t, d.team.ID, f.WalkIn.TeamID)
	require.Equal(t, in.DeviceID, f.DeviceID)
	require.Equal(t, 1, d.sent)

	w := d.k.Waiting()
	require.Len(t, w, 1)
	require.Equal(t, v.ID, w[0].ID)

	_, err = d.k.HandOver(ctx, v.ID, kiosk.Receiver{To: protocol.ToReception}, d.desk())
	require.NoError(t, err)
	taken, err := d.k.Take(ctx, v.ID, d.host.ID, d.desk())
	require.NoError(t, err)
	require.Equal(t, d.host.ID, taken.Host.ID)
	require.Empty(t, d.k.Waiting())

	var st *kiosk.StateError
	_, err = d.k.HandOver(ctx, v.ID, kiosk.Receiver{To: protocol.ToReception}, d.desk())
	require.ErrorAs(t, err, &st, "a visit with a host cannot be handed over")
	require.Equal(t, "hand_over", st.Action)
	_, err = d.k.Take(ctx, v.ID, d.host.ID, d.desk())
	require.ErrorAs(t, err, &st)

	out, err := d.k.CheckOut(ctx, v.ID, d.desk())
	require.NoError(t, err)
	require.Equal(t, "checked_out", out.Status)
	require.Empty(t, d.k.OnSite())
	_, err = d.k.CheckOut(ctx, v.ID, d.desk())
	require.ErrorAs(t, err, &st)

	var kinds []protocol.FactKind
	for _, f := range d.outbox(t) {
		kinds = append(kinds, f.Kind)
	}
	require.Equal(t, []protocol.FactKind{protocol.FactWalkIn, protocol.FactHandOver, protocol.FactTake, protocol.FactDeskCheckOut}, kinds)
}

func TestKioskStore_WalkInValidatesAsTheAPI(t *testing.T) {
	d := newDeskSite(t)
	_, err := d.k.WalkIn(context.Background(), kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, Type: "interview",
		Visitor: kiosk.Visitor{Name: " ", Phone: "07700 900123", Email: "not an email"}, DeviceID: "kiosk-1"})
	var ve *kiosk.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, map[string]string{
		"visitor.name":  "is required and may not be blank",
		"visitor.phone": "must be an E.164 number such as +447700900123",
		"visitor.email": "must be an email address",
		"type":          "no visit type with this key is turned on",
	}, ve.Fields)
	require.Empty(t, d.outbox(t))
}

func TestKioskStore_ExpressCheckIn(t *testing.T) {
	d := newDeskSite(t)
	ctx := context.Background()
	c := passtoken.Claims{VisitID: d.invited.ID, SiteID: d.siteID, GateIDs: d.invited.Rules.GateIDs,
		NotBefore: *d.invited.ExpectedAt, NotAfter: *d.invited.ExpectedUntil, IssuedAt: d.now.Add(-24 * time.Hour)}
	tok, err := passtoken.Sign(d.key, c)
	require.NoError(t, err)

	early := kiosk.CheckIn{Token: tok, At: d.now.Add(-3 * time.Hour), DeviceID: "kiosk-1"}
	var refused *kiosk.RefusedError
	_, err = d.k.CheckIn(ctx, early)
	require.ErrorAs(t, err, &refused)
	require.Equal(t, string(passrule.NotYet), refused.Reason)

	v, err := d.k.CheckIn(ctx, kiosk.CheckIn{Code: ids.ShortCode(d.invited.ID), At: d.now, DeviceID: "kiosk-1"})
	require.NoError(t, err, "gate_ids do not restrict the desk")
	require.Equal(t, "checked_in", v.Status)
	require.False(t, v.NeedsSomeone, "an invited visit has its host")

	_, err = d.k.CheckIn(ctx, kiosk.CheckIn{Token: tok, At: d.now, DeviceID: "kiosk-1"})
	require.ErrorAs(t, err, &refused)
	require.Equal(t, protocol.ReasonAlreadyIn, refused.Reason)

	byPass, ok := d.k.VisitByPass(tok)
	require.True(t, ok)
	require.Equal(t, d.invited.ID, byPass.ID)

	_, err = d.k.CheckIn(ctx, kiosk.CheckIn{Code: "ZZZZZZZZ", At: d.now, DeviceID: "kiosk-1"})
	require.True(t, errors.Is(err, kiosk.ErrNotFound))
	facts := d.outbox(t)
	require.Len(t, facts, 1)
	require.Equal(t, protocol.FactDeskCheckIn, facts[0].Kind)
}

func TestKioskStore_ReadsForTheKiosk(t *testing.T) {
	d := newDeskSite(t)
	site := d.k.Site()
	require.Equal(t, "Harbour Office", site.Name)
	require.Equal(t, 15*time.Minute, site.WaitLimit)
	require.Equal(t, "Europe/London", site.Location.String())
	require.Equal(t, []kiosk.Person{{ID: d.host.ID, Name: "Grace Hopper", JobTitle: "Rear admiral"}}, d.k.SearchPeople("hop", 8))
	types := d.k.VisitTypes()
	require.Len(t, types, 1, "only the types turned on")
	_, ok := d.k.VisitType("interview")
	require.False(t, ok)
	v, ok := d.k.VisitByCode(ids.ShortCode(d.invited.ID))
	require.True(t, ok)
	require.Equal(t, &kiosk.Ref{ID: d.host.ID, Name: d.host.Name}, v.Host)
}

// A walk-in's badge carries a pass signed by the appliance's badge key;
// scanned at sign-out it names its visit, and only at its own site.
func TestKioskStore_BadgePassNamesItsVisit(t *testing.T) {
	d := newDeskSite(t)
	k, _, err := badgekey.Open(filepath.Join(t.TempDir(), badgekey.FileName), nil)
	require.NoError(t, err)
	_, err = d.c.Apply([]protocol.Change{{Seq: 8, At: d.now, Key: &protocol.Key{ID: k.ID(), Public: k.Public(), Kind: protocol.KeyBadge, SiteID: d.siteID}}})
	require.NoError(t, err)
	d.k.badges = k
	v, err := d.k.WalkIn(context.Background(), kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, Type: "meeting", DeviceID: "kiosk-1",
		Visitor: kiosk.Visitor{Name: "Ada Lovelace"}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(v.Pass, passtoken.BadgePrefix), "badge pass %q", v.Pass)
	again, _ := d.k.Visit(v.ID)
	require.Equal(t, v.Pass, again.Pass, "a reprint is the same badge")

	got, ok := d.k.VisitByPass(v.Pass)
	require.True(t, ok)
	require.Equal(t, v.ID, got.ID)

	elsewhere := &kioskStore{c: d.c, siteID: ids.New(ids.Site), now: d.k.now, log: d.k.log}
	_, ok = elsewhere.VisitByPass(v.Pass)
	require.False(t, ok, "another site's desk does not take the badge")
}

// countingSigner is the appliance's badge key, counting its signatures.
type countingSigner struct {
	k *badgekey.Key
	n int
}

func (s *countingSigner) Sign(visitID, siteID string, issued time.Time, loc *time.Location) (string, error) {
	s.n++
	return s.k.Sign(visitID, siteID, issued, loc)
}

// The lists of visits on site carry each visit's badge pass, signed once:
// the reception page lists every visit on site on every load, and the pass
// a list, a second list and the visit itself give is the one the key
// signs for the visit's check-in.
func TestKioskStore_BadgePassSignedOnce(t *testing.T) {
	d := newDeskSite(t)
	key, _, err := badgekey.Open(filepath.Join(t.TempDir(), badgekey.FileName), nil)
	require.NoError(t, err)
	signer := &countingSigner{k: key}
	d.k.badges = signer
	var made []kiosk.Visit
	for _, name := range []string{"Ada Lovelace", "Alan Turing"} {
		v, err := d.k.WalkIn(context.Background(), kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, TeamID: d.team.ID, Type: "meeting",
			DeviceID: d.desk().DeviceID, Visitor: kiosk.Visitor{Name: name, Email: "x@example.com"}})
		require.NoError(t, err)
		require.NotEmpty(t, v.Pass)
		made = append(made, v)
	}
	require.Equal(t, 2, signer.n)
	for range 3 {
		for _, list := range [][]kiosk.Visit{d.k.OnSite(), d.k.Waiting()} {
			require.Len(t, list, 2)
			for _, v := range list {
				want, err := key.Sign(v.ID, d.siteID, *v.CheckedInAt, d.c.View().Location())
				require.NoError(t, err)
				require.Equal(t, want, v.Pass)
			}
		}
	}
	got, ok := d.k.Visit(made[0].ID)
	require.True(t, ok)
	require.Equal(t, made[0].Pass, got.Pass)
	require.Equal(t, 2, signer.n, "each visit's pass signed once")
}

// A walk-in's ID from the form finds the visit it made when the same
// submit comes again, and nothing else: an invited visit's ID, or
// another walk-in's under another name, gives no visit and no badge.
func TestKioskStore_WalkInIDIsNoKeyToAnotherVisit(t *testing.T) {
	d := newDeskSite(t)
	ctx := context.Background()
	var ve *kiosk.ValidationError
	_, err := d.k.WalkIn(ctx, kiosk.WalkIn{ID: d.invited.ID, At: d.now, Type: "meeting", DeviceID: "kiosk-1",
		Visitor: kiosk.Visitor{Name: "Alan Turing"}})
	require.ErrorAs(t, err, &ve)
	require.Contains(t, ve.Fields, "visit_id")

	in := kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, Type: "meeting", DeviceID: "kiosk-1", Visitor: kiosk.Visitor{Name: "Ada Lovelace"}}
	_, err = d.k.WalkIn(ctx, in)
	require.NoError(t, err)
	other := in
	other.Visitor.Name = "Mallory"
	_, err = d.k.WalkIn(ctx, other)
	require.ErrorAs(t, err, &ve)
	require.Len(t, d.outbox(t), 1)
}

// A hand-over leaves the visit waiting with its receiver, as the API's
// does: a person or team by name, reception by none; a visit for no one
// in particular takes a receiving team as its team.
func TestKioskStore_HandOverNamesTheReceiver(t *testing.T) {
	d := newDeskSite(t)
	ctx := context.Background()
	v, err := d.k.WalkIn(ctx, kiosk.WalkIn{ID: ids.New(ids.Visit), At: d.now, Type: "meeting", DeviceID: "kiosk-1",
		Visitor: kiosk.Visitor{Name: "Ada Lovelace"}})
	require.NoError(t, err)
	got, err := d.k.HandOver(ctx, v.ID, kiosk.Receiver{To: protocol.ToPerson, PersonID: d.host.ID}, d.desk())
	require.NoError(t, err)
	require.Equal(t, protocol.ToPerson, got.WaitsWith)
	require.Equal(t, &kiosk.Ref{ID: d.host.ID, Name: "Grace Hopper"}, got.Receiver)
	require.Nil(t, got.Host, "a receiver is no host: the visit can still be taken or handed over")
	require.True(t, got.NeedsSomeone)

	got, err = d.k.HandOver(ctx, v.ID, kiosk.Receiver{To: protocol.ToTeam, TeamID: d.team.ID}, d.desk())
	require.NoError(t, err)
	require.Equal(t, &kiosk.Ref{ID: d.team.ID, Name: "Facilities"}, got.Receiver)
	require.Equal(t, &kiosk.Ref{ID: d.team.ID, Name: "Facilities"}, got.Team, "a desk visit takes the receiving team")

	got, err = d.k.HandOver(ctx, v.ID, kiosk.Receiver{To: protocol.ToReception}, d.desk())
	require.NoError(t, err)
	require.Equal(t, protocol.ToReception, got.WaitsWith)
	require.Nil(t, got.Receiver)
	stored, _ := d.c.View().Visit(v.ID)
	require.Equal(t, protocol.ToReception, stored.Receiver, "kept in the cache")
}
