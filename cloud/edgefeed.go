package cloud

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// This file holds what a site's edge receives from the cloud: the wire
// form (sync/protocol) of visits, gates, site settings, pass keys and
// people, and
// the snapshot a store reads for a resync. Both stores convert with these
// functions, so they send the same objects (docs/decisions.md, "Edge facts
// in the cloud").

// DefaultOfflineLimitMinutes is the offline limit every site's settings
// carry until the API has a field for it: a day. A gate whose cache is
// older fails as its configuration says.
const DefaultOfflineLimitMinutes = 24 * 60

// The bounds and default of a site's wait limit (Site.WaitLimitMinutes):
// how long a visitor may wait at reception before the kiosk's queue
// highlights them and whoever they wait with is reminded.
const (
	DefaultWaitLimitMinutes = 10
	MinWaitLimitMinutes     = 1
	MaxWaitLimitMinutes     = 240
)

// EdgeHorizon is how long after EdgeUntil an edge still needs a visit: a
// pass works up to a week (passrule.MaxWindowMinutes) after its visit's
// expected end, and a day more covers rounding to the site's day. A
// snapshot leaves out visits whose EdgeUntil is further back.
const EdgeHorizon = 8 * 24 * time.Hour

// edgeMaxText is the protocol's bound on a name, in bytes.
const edgeMaxText = 200

// EdgeSite names the tenant's site as the protocol does.
func EdgeSite(t Tenant, siteID string) protocol.Site {
	return protocol.Site{Mode: string(t.Mode), OrgID: t.OrgID, SiteID: siteID}
}

// SiteTenant is the tenant and site ID a protocol site names.
func SiteTenant(s protocol.Site) (Tenant, string) {
	return Tenant{OrgID: s.OrgID, Mode: Mode(s.Mode)}, s.SiteID
}

// EdgeUntil is the time from which a visit's pass can work for at most
// EdgeHorizon more: its expected end, or for a visit without one (a
// walk-in, whose pass lasts the day of arrival at the site) a day after
// its check-in. It is nil for a visit with neither, which an edge keeps
// for good. Stores index it to choose a snapshot's visits.
func EdgeUntil(v Visit) *time.Time {
	switch {
	case v.ExpectedUntil != nil:
		return utcPtr(v.ExpectedUntil)
	case v.CheckedInAt != nil:
		t := v.CheckedInAt.UTC().Truncate(time.Microsecond).Add(24 * time.Hour)
		return &t
	}
	return nil
}

// EdgeVisit is what a site's edge keeps of v: enough to decide at a gate
// and to show the visitor's and the lead host's names. v.Visitor must be
// filled as a store reads it: an erased visitor's visit has no name. A
// pass that names no holder is the visit's own.
func EdgeVisit(v Visit) protocol.Visit {
	holder := v.Pass.ForVisitID
	if holder == "" {
		holder = v.ID
	}
	rules := protocol.FromRules(v.Pass.Rules)
	rules.GateIDs = slices.Clone(rules.GateIDs)
	out := protocol.Visit{
		ID:            v.ID,
		Status:        string(v.Status),
		ExpectedAt:    utcPtr(v.ExpectedAt),
		ExpectedUntil: utcPtr(v.ExpectedUntil),
		CheckedInAt:   utcPtr(v.CheckedInAt),
		CheckedOutAt:  utcPtr(v.CheckedOutAt),
		Rules:         rules,
		Uses:          v.Pass.Uses,
		Revoked:       v.Pass.Revoked,
		ForVisitID:    holder,
		ReenteredAs:   v.ReenteredAs,
		VisitorName:   clip(v.Visitor.Name),
		HostName:      clip(leadName(v)),
		// What the reception kiosk shows (docs/decisions.md, "Kiosk data
		// and facts").
		Type:           clip(v.Type),
		Source:         string(v.Source),
		Audience:       string(v.Audience),
		HostID:         leadID(v),
		NeedsSomeone:   v.NeedsSomeone,
		WaitingSince:   utcPtr(v.WaitingSince),
		VisitorID:      v.Visitor.ID,
		VisitorEmail:   clip(v.Visitor.Email),
		VisitorPhone:   clip(v.Visitor.Phone),
		VisitorCompany: clip(v.Visitor.Company),
		// How the visitor came in: through gate_id, or, checked in with
		// none, at the desk, and an entry gate lets them in once
		// (docs/decisions.md, "Entering after a desk check-in (issue 16)").
		GateID: v.GateID,
		AtDesk: v.Status == VisitCheckedIn && v.GateID == "",
	}
	if out.WaitingSince == nil {
		out.WaitingSince = utcPtr(WaitStart(v)) // a visit stored before WaitingSince
	}
	if v.Team != nil {
		out.TeamID, out.TeamName = v.Team.ID, clip(v.Team.Name)
	}
	out.Receiver, out.ReceiverID = edgeReceiver(v)
	return out
}

// edgeReceiver is whom a visit nobody has taken waits with after a
// hand-over, as the feed carries it: none once it has a host, or when
// the receiver's ID is not one the feed can carry.
func edgeReceiver(v Visit) (kind, id string) {
	if leadID(v) != "" {
		return "", ""
	}
	switch r := v.Receiver; {
	case r.Kind == ReceiverReception:
		return protocol.ToReception, ""
	case r.Kind == ReceiverPerson && ids.Valid(ids.Person, r.PersonID):
		return protocol.ToPerson, r.PersonID
	case r.Kind == ReceiverTeam && ids.Valid(ids.Team, r.TeamID):
		return protocol.ToTeam, r.TeamID
	}
	return "", ""
}

// leadID is the ID of the visit's lead host, or "" when nobody hosts it
// (or its ID is not a person's, which the feed could not carry).
func leadID(v Visit) string {
	id := v.HostID
	for _, h := range v.Hosts {
		if h.Role == HostRoleLead {
			id = h.ID
			break
		}
	}
	if !ids.Valid(ids.Person, id) {
		return ""
	}
	return id
}

// leadName is the name of the visit's lead host, or "" when nobody hosts
// it.
func leadName(v Visit) string {
	for _, h := range v.Hosts {
		if h.Role == HostRoleLead {
			return h.Name
		}
	}
	for _, h := range v.Hosts {
		if h.ID == v.HostID && v.HostID != "" {
			return h.Name
		}
	}
	return ""
}

// clip cuts s to the protocol's bound on names, at a character boundary:
// the API counts characters, the protocol bytes.
func clip(s string) string { return clipTo(s, edgeMaxText) }

// clipTo cuts s to at most n bytes, at a character boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// EdgeGate is a gate as its site's edge keeps it.
func EdgeGate(g Gate) protocol.Gate {
	return protocol.Gate{ID: g.ID, Name: clip(g.Name), Direction: string(g.Direction)}
}

// EdgeSettings are the settings of a site its edge needs.
func EdgeSettings(s Site) protocol.Settings {
	return protocol.Settings{Timezone: s.Timezone, OfflineLimitMinutes: DefaultOfflineLimitMinutes, SiteName: clip(s.Name),
		WaitLimitMinutes: s.WaitLimit()}
}

// EdgeKey is the public half of a pass-signing key, under the ID passes
// name it by, with the time it retires. It returns an error for a key that
// is not an Ed25519 private key.
func EdgeKey(k PassKey) (protocol.Key, error) {
	if len(k.Private) != ed25519.PrivateKeySize {
		return protocol.Key{}, fmt.Errorf("pass key %s: %d bytes, not an Ed25519 private key", k.ID, len(k.Private))
	}
	pub := ed25519.PrivateKey(k.Private).Public().(ed25519.PublicKey)
	key := protocol.Key{ID: k.ID, Public: slices.Clone(pub)}
	if k.RetiredAt != nil {
		// Rounded down: the edge stops at most a second early, never late.
		key.RetireAt = max(k.RetiredAt.Unix(), 1)
	}
	return key, nil
}

// EdgeBadgeKey is the edge's certified walk-in badge key as its site's
// feed carries it: a key of kind protocol.KeyBadge bound to the edge's
// site, retired once the edge is revoked. It returns false for an edge
// with no badge key (or one of the wrong length, which is never stored).
func EdgeBadgeKey(e Edge) (protocol.Key, bool) {
	id, err := passtoken.BadgeKeyID(e.BadgeKey)
	if err != nil {
		return protocol.Key{}, false
	}
	return protocol.Key{ID: id, Public: slices.Clone(e.BadgeKey), Kind: protocol.KeyBadge, SiteID: e.SiteID,
		Retired: e.RevokedAt != nil}, true
}

// EdgePerson is a person as every site's edge keeps them: enough to judge
// their personal pass (active, the current pass's issue time) and show
// their name. Every site of the tenant follows every person: a person may
// clock in at any site of the organisation.
func EdgePerson(p Person) protocol.Person {
	var issued int64
	if !p.PassIssuedAt.IsZero() {
		issued = p.PassIssuedAt.Unix()
	}
	return protocol.Person{ID: p.ID, Name: clip(p.Name), Active: p.Active, PassIssuedAt: issued, JobTitle: clip(p.JobTitle)}
}

// EdgeTeam is a team as every site's edge keeps it, for the reception
// kiosk: every site follows every team of its tenant (the kiosk shows
// those at its site or at every site), so a team that moves between sites
// needs no removal.
func EdgeTeam(t Team) protocol.Team {
	return protocol.Team{ID: t.ID, Name: clip(t.Name), SiteID: t.SiteID, VisitorsCanChoose: t.VisitorsCanChoose, Archived: t.Archived}
}

// EdgeVisitType is a visit type as every site's edge keeps it, for the
// reception kiosk: enabled types are the ones it offers walk-ins, with
// their form, in key order as the API lists them (Position stays 0 until
// the API orders types). A form too large for the wire goes
// without it, and the edge has no form to check answers against; the API
// bounds forms well below that.
func EdgeVisitType(vt VisitType) protocol.VisitType {
	out := protocol.VisitType{Key: vt.Key, Name: clip(vt.Name), Enabled: vt.Enabled}
	if len(vt.Form) > 0 && len(vt.Form) <= protocol.MaxFormSchema {
		out.Form = slices.Clone(vt.Form)
	}
	return out
}

// EdgeSnapshot is a site's whole state as its edge needs it, as of feed
// sequence Seq: read in one consistent view, so applying the feed after
// Seq to it gives the site's state at any later sequence.
type EdgeSnapshot struct {
	Site     protocol.Site
	Seq      uint64
	Settings protocol.Settings
	Gates    []protocol.Gate
	Keys     []protocol.Key // the tenant's keys that are not retired, and the badge key of the site's edge that is not revoked (EdgeBadgeKey)
	// Visits are the visits at the site whose pass could still admit:
	// EdgeUntil unset or within EdgeHorizon of the snapshot's time,
	// whatever their status (a cancelled visit must reach the edge, or its
	// still-valid token would admit).
	Visits []protocol.Visit
	People []protocol.Person // every person of the tenant, active or not
	// Teams and VisitTypes are every team and visit type of the tenant,
	// for the reception kiosk.
	Teams      []protocol.Team
	VisitTypes []protocol.VisitType
	// Hardware is the hardware of the site's edge that is not revoked
	// (EdgeHardware), when the cloud holds one; nil otherwise.
	Hardware *protocol.EdgeHardware
}
