package cloud_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestEdgeVisit(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))
	until := at.Add(3 * time.Hour)
	gate := ids.New(ids.Gate)
	base := cloud.Visit{ID: ids.New(ids.Visit), Status: cloud.VisitExpected, ExpectedAt: &at, ExpectedUntil: &until,
		Pass: cloud.Pass{Rules: passrule.Rules{Window: passrule.Window{Before: 10, After: 20}, SingleUse: true,
			Daily: &passrule.Daily{From: 8 * 60, Until: 18 * 60}, GateIDs: []string{gate}}, Uses: 2, Revoked: true},
		Visitor: cloud.Visitor{Name: "Ada Lovelace"}}
	long := strings.Repeat("é", 150) // 300 bytes, 150 characters: a name the API accepts
	cases := []struct {
		name  string
		edit  func(*cloud.Visit)
		check func(*testing.T, cloud.Visit, protocol.Visit)
	}{
		{"fields", func(*cloud.Visit) {}, func(t *testing.T, v cloud.Visit, p protocol.Visit) {
			require.Equal(t, v.ID, p.ID)
			require.Equal(t, "expected", p.Status)
			require.Equal(t, time.UTC, p.ExpectedAt.Location())
			require.Equal(t, at.UTC().Truncate(time.Microsecond), *p.ExpectedAt, "UTC, to the microsecond")
			require.Equal(t, protocol.Rules{Daily: &protocol.Daily{From: 8 * 60, Until: 18 * 60}, Window: protocol.Window{Before: 10, After: 20},
				SingleUse: true, GateIDs: []string{gate}}, p.Rules)
			require.Equal(t, 2, p.Uses)
			require.True(t, p.Revoked)
			require.Equal(t, "Ada Lovelace", p.VisitorName)
			require.Empty(t, p.HostName)
		}},
		{"own pass", func(*cloud.Visit) {}, func(t *testing.T, v cloud.Visit, p protocol.Visit) {
			require.Equal(t, v.ID, p.ForVisitID, "a pass naming no holder is the visit's own")
		}},
		{"re-entry", func(v *cloud.Visit) { v.Pass.ForVisitID, v.ReenteredAs = ids.New(ids.Visit), ids.New(ids.Visit) },
			func(t *testing.T, v cloud.Visit, p protocol.Visit) {
				require.Equal(t, v.Pass.ForVisitID, p.ForVisitID)
				require.Equal(t, v.ReenteredAs, p.ReenteredAs)
			}},
		{"lead host", func(v *cloud.Visit) {
			v.Hosts = []cloud.Host{{ID: "p1", Name: "Co Host", Role: cloud.HostRoleCoHost}, {ID: "p2", Name: "Grace Hopper", Role: cloud.HostRoleLead}}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) { require.Equal(t, "Grace Hopper", p.HostName) }},
		{"host by ID", func(v *cloud.Visit) {
			v.HostID, v.Hosts = "p2", []cloud.Host{{ID: "p1", Name: "Asked"}, {ID: "p2", Name: "Alan Turing"}}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) { require.Equal(t, "Alan Turing", p.HostName) }},
		{"erased", func(v *cloud.Visit) { v.Visitor = cloud.Visitor{} },
			func(t *testing.T, _ cloud.Visit, p protocol.Visit) { require.Empty(t, p.VisitorName) }},
		{"long names", func(v *cloud.Visit) {
			v.Visitor.Name = long
			v.Hosts = []cloud.Host{{ID: "p", Name: "x" + long, Role: cloud.HostRoleLead}}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) {
			require.Len(t, p.VisitorName, 200)
			require.True(t, strings.HasPrefix(long, p.VisitorName))
			require.Len(t, p.HostName, 199, "cut before a character, not inside it")
			require.True(t, utf8.ValidString(p.HostName))
		}},
		{"kiosk", func(v *cloud.Visit) {
			v.Type, v.Source, v.Audience, v.NeedsSomeone = "meeting", cloud.SourceWalkIn, cloud.AudienceTeam, true
			v.Status, v.CheckedInAt, v.Team = cloud.VisitCheckedIn, &at, &cloud.Ref{ID: ids.New(ids.Team), Name: "Sales"}
			v.Visitor = cloud.Visitor{ID: ids.New(ids.Visitor), Name: "Vera", Email: "v@example.com", Phone: "+447700900123", Company: "Acme"}
		}, func(t *testing.T, v cloud.Visit, p protocol.Visit) {
			require.Equal(t, "meeting", p.Type)
			require.Equal(t, "walk_in", p.Source)
			require.Equal(t, "team", p.Audience)
			require.True(t, p.NeedsSomeone)
			require.Equal(t, v.Team.ID, p.TeamID)
			require.Equal(t, "Sales", p.TeamName)
			require.Equal(t, v.Visitor.ID, p.VisitorID)
			require.Equal(t, "+447700900123", p.VisitorPhone)
			require.True(t, p.WaitingSince.Equal(at.Truncate(time.Microsecond)), "a visit stored before waiting_since waits from its check-in")
			require.Empty(t, p.HostID)
		}},
		{"handed over to a person", func(v *cloud.Visit) {
			v.Status, v.CheckedInAt, v.NeedsSomeone = cloud.VisitCheckedIn, &at, true
			v.Receiver = cloud.Receiver{Kind: cloud.ReceiverPerson, PersonID: "person_01h455vb4pex5vsknk084sn02q"}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) {
			require.Equal(t, protocol.ToPerson, p.Receiver)
			require.Equal(t, "person_01h455vb4pex5vsknk084sn02q", p.ReceiverID)
		}},
		{"handed over, then taken", func(v *cloud.Visit) {
			v.Receiver = cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: ids.New(ids.Team)}
			v.Hosts = []cloud.Host{{ID: "person_01h455vb4pex5vsknk084sn02q", Name: "Grace Hopper", Role: cloud.HostRoleLead}}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) {
			require.Empty(t, p.Receiver, "a visit with a host waits with nobody")
			require.Empty(t, p.ReceiverID)
		}},
		{"lead host ID", func(v *cloud.Visit) {
			v.Hosts = []cloud.Host{{ID: "person_01h455vb4pex5vsknk084sn02q", Name: "Grace Hopper", Role: cloud.HostRoleLead}}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) {
			require.Equal(t, "person_01h455vb4pex5vsknk084sn02q", p.HostID)
		}},
		{"walk-in", func(v *cloud.Visit) {
			v.ExpectedAt, v.ExpectedUntil, v.Status, v.CheckedInAt = nil, nil, cloud.VisitCheckedIn, &at
			v.Pass.Rules = passrule.Rules{}
		}, func(t *testing.T, _ cloud.Visit, p protocol.Visit) {
			require.Nil(t, p.ExpectedAt)
			require.NotNil(t, p.Rules.GateIDs, "gate_ids is a list")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := base
			c.edit(&v)
			p := cloud.EdgeVisit(v)
			require.NoError(t, protocol.Validate(&p))
			c.check(t, v, p)
		})
	}
}

func TestEdgeUntil(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	until := at.Add(2 * time.Hour)
	require.Equal(t, until, *cloud.EdgeUntil(cloud.Visit{ExpectedAt: &at, ExpectedUntil: &until, CheckedInAt: &at}))
	require.Equal(t, at.Add(24*time.Hour), *cloud.EdgeUntil(cloud.Visit{CheckedInAt: &at}), "a walk-in's pass lasts its day")
	require.Nil(t, cloud.EdgeUntil(cloud.Visit{}))
}

func TestEdgeKey(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	k, err := cloud.EdgeKey(cloud.PassKey{ID: "0a1b2c3d", Private: priv})
	require.NoError(t, err)
	require.Equal(t, protocol.Key{ID: "0a1b2c3d", Public: []byte(pub)}, k)
	require.NoError(t, protocol.Validate(&k))
	retired := time.Now()
	k, err = cloud.EdgeKey(cloud.PassKey{ID: "0a1b2c3d", Private: priv, RetiredAt: &retired})
	require.NoError(t, err)
	require.Equal(t, retired.Unix(), k.RetireAt, "the edge retires it at the second it retires")
	require.False(t, k.Verifies(retired.Truncate(time.Second)))
	require.True(t, k.Verifies(retired.Truncate(time.Second).Add(-time.Second)))
	_, err = cloud.EdgeKey(cloud.PassKey{ID: "0a1b2c3d", Private: priv[:32]})
	require.Error(t, err)
}

func TestEdgeGateAndSettings(t *testing.T) {
	g := cloud.EdgeGate(cloud.Gate{ID: ids.New(ids.Gate), Name: "Lobby", Direction: cloud.DirectionExit})
	require.NoError(t, protocol.Validate(&g))
	require.Equal(t, "exit", g.Direction)
	s := cloud.EdgeSettings(cloud.Site{Timezone: "Asia/Tokyo"})
	require.NoError(t, protocol.Validate(&s))
	require.Equal(t, protocol.Settings{Timezone: "Asia/Tokyo", OfflineLimitMinutes: 1440, WaitLimitMinutes: cloud.DefaultWaitLimitMinutes}, s)
	site := cloud.EdgeSite(cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeTest}, ids.New(ids.Site))
	require.True(t, site.Valid())
	tn, id := cloud.SiteTenant(site)
	require.Equal(t, cloud.EdgeSite(tn, id), site)
}

func TestEdgePerson(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	long := "x" + strings.Repeat("é", 150)
	p := cloud.EdgePerson(cloud.Person{ID: ids.New(ids.Person), Name: long, Active: true, PassIssuedAt: at})
	require.NoError(t, protocol.Validate(&p))
	require.Equal(t, at.Unix(), p.PassIssuedAt)
	require.Len(t, p.Name, 199, "cut to the protocol's bytes at a character")
	none := cloud.EdgePerson(cloud.Person{ID: ids.New(ids.Person)})
	require.Zero(t, none.PassIssuedAt, "no issue time is 0, not a negative second")
	require.NoError(t, protocol.Validate(&none))
}
