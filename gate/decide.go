package gate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// Gate directions, as the cloud sends them in protocol.Gate.
const (
	Entry = "entry"
	Exit  = "exit"
	Both  = "both"
)

// DefaultOfflineLimit is how old the cache may grow when the site's
// settings give an offline limit of 0 minutes, read as "not set": a
// forgotten setting must neither make every gate stale at once nor let a
// cache grow old for ever.
const DefaultOfflineLimit = 24 * time.Hour

// maxChain bounds how many re-entries a scan follows from the pass's
// visit. A year of daily re-entries is far below it; a longer chain is a
// loop in damaged data, and the scan is refused as ended.
const maxChain = 4096

// Decision is what a scan would do, before anything is done.
type Decision struct {
	// Kind is check_in, check_out, re_entry, entered or refused.
	Kind protocol.FactKind
	// Reason is a refusal's reason; empty for an admit.
	Reason string
	// VisitID and PassVisitID are as in Result.
	VisitID, PassVisitID string
	// PersonID and Direction are as in Result: a personal pass's holder
	// and a punch's direction.
	PersonID, Direction string
	// Visits are the visits an admit leaves behind, to be recorded with
	// its fact: the visit checked in, entered or out; a re-entry's new
	// visit and the visit it was made from. Nil for a refusal.
	Visits []protocol.Visit

	judged      string // the cached visit decided on, if any
	unknownGate bool   // the cache does not know this gate
	repeat      bool   // a punch repeated within PunchRepeat: a passage, no new punch
	// undo are the visits as they were before the admit, to be recorded
	// again if the relay fails after the admit was: Visits, put back.
	undo      []protocol.Visit
	undoPunch *PunchRestore // a punch's: the person's last punch before it
	restore   *PunchRestore // a refusal's that voids a punch: undoPunch
	voids     string        // a relay_failed refusal's: the admit fact it undoes
}

// Admit reports whether the decision lets the visitor through.
func (d Decision) Admit() bool { return d.Kind != protocol.FactRefused && d.Kind != "" }

// Repeat reports whether the decision is a personal pass scanned again
// within PunchRepeat at the gate of the person's last punch: an admit that
// records no fact.
func (d Decision) Repeat() bool { return d.repeat }

// Decide decides on text scanned at time at against the store's current
// state, as Scan would, without waiting for other scans, pulsing or
// recording anything.
func (g *Gate) Decide(text string, at time.Time) Decision {
	st := g.store.State()
	text = strings.TrimSpace(text)
	if isPersonal(text) {
		claims, err := passtoken.VerifyPerson(text, st.KeysAt(at))
		if err != nil {
			return Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
		}
		return g.decidePerson(st, &claims, at)
	}
	claims, badge, err := g.verify(st, text, at)
	if err != nil {
		return Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
	}
	return g.decide(st, &claims, badge, at)
}

// verify checks a visit pass against the organisation's keys, or a
// walk-in badge against the badge keys certified for this gate's site
// alone, and returns its claims as a pass's; badge says which it was. A
// badge of another site is an error, so it is refused invalid_token as a
// token of another organisation would be: no key of this site vouches
// for it.
func (g *Gate) verify(st State, text string, at time.Time) (passtoken.Claims, bool, error) {
	if !isBadge(text) {
		c, err := passtoken.Verify(text, st.KeysAt(at))
		return c, false, err
	}
	b, err := passtoken.VerifyBadge(text, st.BadgeKeysAt(g.siteID, at))
	if err != nil {
		return passtoken.Claims{}, true, err
	}
	if b.SiteID != g.siteID {
		return passtoken.Claims{}, true, fmt.Errorf("verify badge: site %s, not the gate's: %w", b.SiteID, passtoken.ErrUnknownKey)
	}
	// A badge admits at every gate of its site, from its issue to the end
	// of its day: a walk-in's pass, as the cloud makes it.
	return passtoken.Claims{VisitID: b.VisitID, SiteID: b.SiteID, NotAfter: b.NotAfter, IssuedAt: b.IssuedAt}, true, nil
}

// isBadge reports whether text is a walk-in badge rather than a visit pass.
func isBadge(text string) bool { return strings.HasPrefix(text, passtoken.BadgePrefix) }

// decide is the decision on a verified token; badge says it is a walk-in
// badge, whose day bounds it whatever the cache says of its visit.
func (g *Gate) decide(st State, c *passtoken.Claims, badge bool, at time.Time) Decision {
	d := Decision{Kind: protocol.FactRefused, PassVisitID: c.VisitID}
	if c.SiteID != g.siteID {
		d.Reason = string(passrule.WrongGate)
		return d
	}
	if !g.failOpen && stale(st, at) {
		d.Reason = protocol.ReasonStale
		return d
	}
	dir := Entry
	if gt, ok := st.Gate(g.id); ok {
		dir = gt.Direction
	} else {
		d.unknownGate = true
	}

	cur, known := st.Visit(c.VisitID)
	linkMissing := false
	if known {
		for hops := 0; cur.ReenteredAs != ""; hops++ {
			next, ok := st.Visit(cur.ReenteredAs)
			if !ok {
				linkMissing = true // the re-entry made from cur has not reached this edge
				break
			}
			if hops == maxChain {
				d.Reason, d.VisitID, d.judged = string(passrule.Ended), cur.ID, cur.ID
				return d
			}
			cur = next
		}
		d.VisitID, d.judged = cur.ID, cur.ID
	}
	in := g.input(st, c, &cur, known, at)
	if badge && known {
		badgeDay(&in, c.NotAfter)
	}

	checkedIn := known && !linkMissing && cur.Status == string(passrule.CheckedIn)
	// A visitor checked in at no gate (the desk) has not come in yet: an
	// entry gate, or one used both ways, lets them in once (entered). The
	// desk itself is no gate to enter through.
	atDesk := checkedIn && cur.AtDesk && g.id != ""
	if dir == Exit || dir == Both && checkedIn && !atDesk {
		if !checkedIn {
			d.Reason = protocol.ReasonNotIn
			return d
		}
		out := cur
		out.Status, out.AtDesk = string(passrule.CheckedOut), false
		p := pair(out, cur, at)
		p.visits[0].CheckedOutAt = &p.at
		d.Kind = protocol.FactCheckOut
		d.Visits, d.undo = p.split()
		return d
	}

	reentry := known && !linkMissing && cur.Status == string(passrule.CheckedOut)
	if reentry && badge {
		// A walk-in who signed out, at the desk or through an exit gate,
		// has ended their visit: a badge makes no re-entry, and the
		// visitor signs in again at the desk.
		d.Reason = string(passrule.Ended)
		return d
	}
	if reentry {
		in.Status = passrule.Expected // the pass works as on a visit still expected: its own check-out does not end it
	}
	if atDesk {
		in.Uses = max(0, in.Uses-1) // the desk's check-in was the pass's use; entering completes it
	}
	if r := passrule.Decide(in); r != passrule.Admit {
		d.Reason = string(r)
		return d
	}
	switch {
	case atDesk:
		v := cur
		v.GateID, v.AtDesk = g.id, false
		d.Kind = protocol.FactEntered
		d.Visits, d.undo = pair(v, cur, at).split()
	case checkedIn || linkMissing:
		d.Reason = protocol.ReasonAlreadyIn
	case reentry:
		d.Kind, d.Visits = protocol.FactReEntry, reEnter(cur, g.id, at)
		d.VisitID = d.Visits[0].ID
		// Undone, the new visit is left cancelled (a cache keeps what it
		// once held) and the pass's visit names no re-entry again.
		gone := d.Visits[0]
		gone.Status, gone.CheckedInAt = string(passrule.Cancelled), nil
		d.undo = []protocol.Visit{gone, cur}
	case known:
		v := cur
		v.Status, v.Uses = string(passrule.CheckedIn), v.Uses+1
		v.GateID, v.AtDesk = g.id, false // at the desk no gate: the desk's fact marks the visit AtDesk when recorded
		p := pair(v, cur, at)
		p.visits[0].CheckedInAt = &p.at
		d.Kind = protocol.FactCheckIn
		d.Visits, d.undo = p.split()
	default:
		v := fromClaims(c, at)
		v.GateID = g.id
		d.Kind, d.Visits, d.VisitID = protocol.FactCheckIn, []protocol.Visit{v}, v.ID
		// Undone, the visit is as its token describes it, still expected.
		was := v
		was.Status, was.CheckedInAt, was.Uses = string(passrule.Expected), nil, 0
		d.undo = []protocol.Visit{was}
	}
	return d
}

// visitPair is a decision's Visits, [now], and undo, [was], and the
// time of the scan that now's check-in or check-out time points at, in
// one allocation: a visit is some 400 bytes, and a scan makes one pair.
// Taking at's address in decide instead moved it to the heap on every
// call, refusals too.
type visitPair struct {
	visits [2]protocol.Visit
	at     time.Time
}

func pair(now, was protocol.Visit, at time.Time) *visitPair {
	return &visitPair{visits: [2]protocol.Visit{now, was}, at: at}
}

// split returns the decision's Visits and undo.
func (p *visitPair) split() (visits, undo []protocol.Visit) {
	return p.visits[:1:1], p.visits[1:2:2]
}

// input is the pass-rule decision's input for visit v, or for the token's
// claims alone when the edge does not know the visit.
func (g *Gate) input(st State, c *passtoken.Claims, v *protocol.Visit, known bool, at time.Time) passrule.Input {
	in := passrule.Input{VisitSiteID: c.SiteID, GateID: g.id, GateSiteID: g.siteID, Location: st.Location(), Now: at}
	if !known {
		in.Status = passrule.Expected
		in.Rules = passrule.Rules{GateIDs: c.GateIDs, SingleUse: c.SingleUse}
		if c.Daily != nil {
			in.Rules.Daily = &passrule.Daily{From: passrule.Clock(c.Daily.From), Until: passrule.Clock(c.Daily.Until)}
		}
		in.ExpectedAt, in.ExpectedUntil = c.NotBefore, c.NotAfter // the window is already in them
		if g.id == "" {
			in.Rules.GateIDs = nil // at the desk no gate applies
		}
		return in
	}
	in.Rules, in.Status, in.Revoked, in.Uses = v.Rules.Rules(), passrule.Status(v.Status), v.Revoked, v.Uses
	if g.id == "" {
		in.Rules.GateIDs = nil // at the desk no gate applies
	}
	if v.ExpectedAt != nil {
		in.ExpectedAt = *v.ExpectedAt
	}
	if v.ExpectedUntil != nil {
		in.ExpectedUntil = *v.ExpectedUntil
	} else if v.CheckedInAt != nil {
		in.ExpectedUntil = endOfDay(*v.CheckedInAt, in.Location) // a walk-in's pass lasts their day, as in the cloud
	}
	return in
}

// badgeDay bounds a known visit's pass by its badge's day: the cache's
// visit wins over the token (a check-out or a cancellation stops the
// badge), but a badge is a day pass whatever the visit has become since
// (the cloud's visit, which may last longer, has a pass of its own). The
// earlier of the two ends decides, as expired.
func badgeDay(in *passrule.Input, until time.Time) {
	end := in.ExpectedUntil.Add(time.Duration(in.Rules.Window.After) * time.Minute)
	if in.ExpectedUntil.IsZero() || until.Before(end) {
		in.ExpectedUntil, in.Rules.Window.After = until, 0
	}
}

// endOfDay is the last microsecond of t's day at loc.
func endOfDay(t time.Time, loc *time.Location) time.Time { return passrule.EndOfDay(t, loc) }

// reEnter returns the new visit a re-entry on cur makes, checked in at
// gate gateID at at, and cur naming it.
func reEnter(cur protocol.Visit, gateID string, at time.Time) []protocol.Visit {
	next := cur
	next.ID = ids.New(ids.Visit)
	next.Status, next.CheckedInAt, next.CheckedOutAt = string(passrule.CheckedIn), &at, nil
	next.GateID, next.AtDesk = gateID, false
	next.Uses = cur.Uses + 1
	next.ReenteredAs = ""
	next.Rules.GateIDs = slices.Clone(cur.Rules.GateIDs)
	if next.ForVisitID == "" {
		next.ForVisitID = cur.ID
	}
	cur.ReenteredAs = next.ID
	return []protocol.Visit{next, cur}
}

// fromClaims is a visit the edge has never received, checked in at at as
// its token describes it: the window's edges become expected_at and
// expected_until with a window of 0, which decides the same.
func fromClaims(c *passtoken.Claims, at time.Time) protocol.Visit {
	v := protocol.Visit{
		ID: c.VisitID, Status: string(passrule.CheckedIn), CheckedInAt: &at, Uses: 1, ForVisitID: c.VisitID,
		Rules: protocol.Rules{SingleUse: c.SingleUse, GateIDs: slices.Clone(c.GateIDs)},
	}
	if v.Rules.GateIDs == nil {
		v.Rules.GateIDs = []string{}
	}
	if c.Daily != nil {
		v.Rules.Daily = &protocol.Daily{From: passrule.Clock(c.Daily.From), Until: passrule.Clock(c.Daily.Until)}
	}
	if !c.NotBefore.IsZero() {
		t := c.NotBefore
		v.ExpectedAt = &t
	}
	if !c.NotAfter.IsZero() {
		t := c.NotAfter
		v.ExpectedUntil = &t
		// A visit's expected_until must follow its expected_at. A token
		// valid for one instant has both equal; the lower bound no longer
		// matters once the visit is in, so it goes.
		if v.ExpectedAt != nil && !t.After(*v.ExpectedAt) {
			v.ExpectedAt = nil
		}
	}
	return v
}

// stale reports whether st is too old to decide on at time at.
func stale(st State, at time.Time) bool {
	s, ok := st.Settings()
	synced := st.SyncedAt()
	return !ok || synced.IsZero() || at.Sub(synced) > offlineLimit(s)
}

func offlineLimit(s protocol.Settings) time.Duration {
	if s.OfflineLimitMinutes == 0 {
		return DefaultOfflineLimit
	}
	return time.Duration(s.OfflineLimitMinutes) * time.Minute
}

// Staleness reports whether st is too old for a gate that fails secure to
// decide on at time at, and if so why, in words for a health check.
func Staleness(st State, at time.Time) (stale bool, why string) {
	s, ok := st.Settings()
	synced := st.SyncedAt()
	switch {
	case !ok:
		return true, "the cloud has not sent the site's settings"
	case synced.IsZero():
		return true, "the cache has never been synced with the cloud"
	}
	if age, limit := at.Sub(synced), offlineLimit(s); age > limit {
		return true, fmt.Sprintf("last synced %s ago, over the offline limit of %s", age.Truncate(time.Second), limit)
	}
	return false, ""
}
