package edge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/contact"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/textfold"
	"github.com/svc-vms/svc/sync/protocol"
)

// retryWindow is how long after a walk-in the same submit, sent again,
// finds the visit it made.
const retryWindow = time.Hour

// BadgeSigner signs the badge passes the kiosk prints: tokens of the
// appliance's own key, certified by the cloud for this site only
// (DESIGN.md, "Offline walk-in passes").
type BadgeSigner interface {
	Sign(visitID, siteID string, issued time.Time, loc *time.Location) (string, error)
}

// kioskStore is kiosk.Store on the cache: reads from the View, writes as
// facts recorded with their visit in one transaction, like a gate's.
type kioskStore struct {
	c      *cache.Cache
	siteID string
	notify func()
	badges BadgeSigner // nil: badges carry no pass
	// online reports whether the cloud takes the site's facts now.
	online func() bool
	now    func() time.Time
	log    func(msg string, args ...any)

	// mu makes each desk write read its visit and record it changed with
	// no other desk write in between.
	mu sync.Mutex

	// passes are the badge passes signed so far. The reception page, the
	// evacuation list and the sign-out search each list every visit on
	// site with its pass, and an Ed25519 signature per visit was most of
	// their time (300 on site: 10-16 ms a page on amd64, see
	// docs/performance.md); a visit's pass is the same every time (issued
	// at its check-in), so it is signed once.
	passMu sync.Mutex
	passes map[passKey]string
}

// passKey is what a badge pass is signed from besides the site.
type passKey struct {
	visitID string
	issued  int64 // Unix nanoseconds
	zone    string
}

// maxPasses bounds the remembered passes, far above the visits a site has
// on site at once: past it they are forgotten and signed again as needed.
const maxPasses = 8192

var _ kiosk.Store = (*kioskStore)(nil)

func (k *kioskStore) Site() kiosk.Site {
	v := k.c.View()
	s, _ := v.Settings()
	out := kiosk.Site{ID: k.siteID, Name: s.SiteName, Timezone: s.Timezone, Location: v.Location(),
		WaitLimit: time.Duration(s.WaitLimitMinutes) * time.Minute}
	return out
}

func person(p protocol.Person) kiosk.Person {
	return kiosk.Person{ID: p.ID, Name: p.Name, JobTitle: p.JobTitle}
}

func (k *kioskStore) SearchPeople(q string, limit int) []kiosk.Person {
	var out []kiosk.Person
	for _, p := range k.c.View().SearchPeople(q, limit) {
		out = append(out, person(p))
	}
	return out
}

// Person returns an active person: a deactivated one receives no visits.
func (k *kioskStore) Person(id string) (kiosk.Person, bool) {
	p, ok := k.c.View().Person(id)
	if !ok || !p.Active {
		return kiosk.Person{}, false
	}
	return person(p), true
}

func team(t protocol.Team) kiosk.Team {
	return kiosk.Team{ID: t.ID, Name: t.Name, VisitorsCanChoose: t.VisitorsCanChoose}
}

func (k *kioskStore) Teams() []kiosk.Team {
	var out []kiosk.Team
	for _, t := range k.c.View().Teams(k.siteID) {
		out = append(out, team(t))
	}
	return out
}

// Team returns a team that can receive visits here: not archived, of
// this site or of every site.
func (k *kioskStore) Team(id string) (kiosk.Team, bool) {
	t, ok := k.c.View().Team(id)
	if !ok || t.Archived || (t.SiteID != "" && t.SiteID != k.siteID) {
		return kiosk.Team{}, false
	}
	return team(t), true
}

func visitType(t protocol.VisitType) kiosk.VisitType {
	name := t.Name
	if name == "" {
		name = t.Key
	}
	return kiosk.VisitType{Key: t.Key, Name: name, Schema: t.Form}
}

func (k *kioskStore) VisitTypes() []kiosk.VisitType {
	var out []kiosk.VisitType
	for _, t := range k.c.View().VisitTypes() {
		out = append(out, visitType(t))
	}
	return out
}

// VisitType returns a visit type turned on.
func (k *kioskStore) VisitType(key string) (kiosk.VisitType, bool) {
	t, ok := k.c.View().VisitType(key)
	if !ok || !t.Enabled {
		return kiosk.VisitType{}, false
	}
	return visitType(t), true
}

// Visitors returns the visitor records behind the site's visits whose
// visitor has this name, newest visit first, one per record.
func (k *kioskStore) Visitors(name string, limit int) []kiosk.Visitor {
	var out []kiosk.Visitor
	seen := map[string]bool{}
	for _, v := range k.c.View().VisitsByVisitorName(name) {
		if v.VisitorID == "" || seen[v.VisitorID] || (v.VisitorEmail == "" && v.VisitorPhone == "") {
			continue // without a contact there is nothing to tell two records apart by
		}
		seen[v.VisitorID] = true
		out = append(out, kiosk.Visitor{ID: v.VisitorID, Name: v.VisitorName, Email: v.VisitorEmail,
			Phone: v.VisitorPhone, Company: v.VisitorCompany})
		if len(out) == limit {
			break
		}
	}
	return out
}

// visit is v as the kiosk shows it, with its badge pass when it is in.
func (k *kioskStore) visit(view *cache.View, v protocol.Visit) kiosk.Visit {
	out := kiosk.Visit{ID: v.ID, Status: v.Status, Type: v.Type, Source: v.Source, Audience: v.Audience,
		Visitor: kiosk.Visitor{ID: v.VisitorID, Name: v.VisitorName, Email: v.VisitorEmail, Phone: v.VisitorPhone,
			Company: v.VisitorCompany},
		Code: ids.ShortCode(v.ID), NeedsSomeone: v.NeedsSomeone, CheckedInAt: v.CheckedInAt, CheckedOutAt: v.CheckedOutAt,
		Pending: view.Pending(v.ID)}
	if v.HostID != "" || v.HostName != "" {
		out.Host = &kiosk.Ref{ID: v.HostID, Name: v.HostName}
	}
	if v.TeamID != "" {
		out.Team = &kiosk.Ref{ID: v.TeamID, Name: v.TeamName}
	}
	out.WaitsWith = v.Receiver
	switch v.Receiver {
	case protocol.ToPerson:
		p, _ := view.Person(v.ReceiverID)
		out.Receiver = &kiosk.Ref{ID: v.ReceiverID, Name: p.Name}
	case protocol.ToTeam:
		t, _ := view.Team(v.ReceiverID)
		out.Receiver = &kiosk.Ref{ID: v.ReceiverID, Name: t.Name}
	}
	switch {
	case v.WaitingSince != nil:
		out.WaitingSince = *v.WaitingSince
	case v.CheckedInAt != nil:
		out.WaitingSince = *v.CheckedInAt
	}
	if k.badges != nil && v.Status == string(passrule.CheckedIn) && v.CheckedInAt != nil {
		// Issued at the check-in, so the same visit always has the same
		// badge pass: a reprint is the badge printed first.
		tok, err := k.badgePass(v.ID, *v.CheckedInAt, view.Location())
		if err != nil {
			k.log("kiosk: badge pass not signed", "visit_id", v.ID, "error", err.Error())
		} else {
			out.Pass = tok
		}
	}
	return out
}

// badgePass is the badge pass of a visit issued at issued, signed once
// and then remembered.
func (k *kioskStore) badgePass(visitID string, issued time.Time, loc *time.Location) (string, error) {
	key := passKey{visitID: visitID, issued: issued.UnixNano(), zone: loc.String()}
	k.passMu.Lock()
	tok, ok := k.passes[key]
	k.passMu.Unlock()
	if ok {
		return tok, nil
	}
	tok, err := k.badges.Sign(visitID, k.siteID, issued, loc)
	if err != nil {
		return "", err
	}
	k.passMu.Lock()
	if k.passes == nil || len(k.passes) >= maxPasses {
		k.passes = map[passKey]string{}
	}
	k.passes[key] = tok
	k.passMu.Unlock()
	return tok, nil
}

func (k *kioskStore) Visit(id string) (kiosk.Visit, bool) {
	view := k.c.View()
	v, ok := view.Visit(id)
	if !ok {
		return kiosk.Visit{}, false
	}
	return k.visit(view, v), true
}

func (k *kioskStore) VisitByCode(code string) (kiosk.Visit, bool) {
	view := k.c.View()
	v, ok := view.VisitByCode(code)
	if !ok {
		return kiosk.Visit{}, false
	}
	return k.visit(view, v), true
}

// VisitByPass returns the visit a scanned pass names: the cloud's pass of
// an invited visitor, or a badge this site's appliance printed.
func (k *kioskStore) VisitByPass(token string) (kiosk.Visit, bool) {
	view := k.c.View()
	id, ok := gate.PassVisit(view, k.siteID, token, k.now())
	if !ok {
		return kiosk.Visit{}, false
	}
	v, ok := view.Visit(id)
	for hops := 0; ok && v.ReenteredAs != "" && hops < 64; hops++ { // the newest visit made on the pass
		v, ok = view.Visit(v.ReenteredAs)
	}
	if !ok {
		return kiosk.Visit{}, false
	}
	return k.visit(view, v), true
}

func (k *kioskStore) list(vs []protocol.Visit, view *cache.View) []kiosk.Visit {
	out := make([]kiosk.Visit, 0, len(vs))
	for _, v := range vs {
		out = append(out, k.visit(view, v))
	}
	return out
}

func (k *kioskStore) Waiting() []kiosk.Visit {
	view := k.c.View()
	return k.list(view.Waiting(), view)
}

func (k *kioskStore) OnSite() []kiosk.Visit {
	view := k.c.View()
	return k.list(view.OnSite(), view)
}

func (k *kioskStore) Sync() kiosk.SyncState {
	depth, _, err := k.c.OutboxStats()
	if err != nil {
		depth = 0
	}
	return kiosk.SyncState{Online: k.online == nil || k.online(), Pending: depth}
}

// record stores the desk's change of visits with its fact and tells the
// sync half to send it.
func (k *kioskStore) record(f protocol.Fact, visits ...protocol.Visit) error {
	f.ID = ids.New(ids.Fact)
	if _, err := k.c.Record(cache.LocalChange{Visits: visits}, f); err != nil {
		return fmt.Errorf("kiosk: record %s: %w", f.Kind, err)
	}
	k.notify()
	return nil
}

// WalkIn signs a visitor in: a visit made here, checked in now, for a
// person, a team or the desk. Its ID comes from the kiosk, so a retried
// submit returns the visit the first one made.
func (k *kioskStore) WalkIn(ctx context.Context, in kiosk.WalkIn) (kiosk.Visit, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	view := k.c.View()
	if !ids.Valid(ids.Visit, in.ID) {
		return kiosk.Visit{}, fmt.Errorf("kiosk: walk-in ID %q is not a visit ID", in.ID)
	}
	if v, ok := view.Visit(in.ID); ok {
		// The same submit again (a double tap, a retry) finds the visit it
		// made. Anything else with this ID is another visit: a public
		// tablet must not hand out its badge for a guessed or copied ID.
		if v.Source == "walk_in" && v.CheckedInAt != nil && in.At.Sub(*v.CheckedInAt).Abs() < retryWindow &&
			textfold.Fold(v.VisitorName) == textfold.Fold(in.Visitor.Name) {
			return k.visit(view, v), nil
		}
		return kiosk.Visit{}, &kiosk.ValidationError{Fields: map[string]string{"visit_id": "belongs to another visit"}}
	}
	bad := map[string]string{}
	vis := contact.Visitor{Name: strings.TrimSpace(in.Visitor.Name), Email: in.Visitor.Email, Phone: in.Visitor.Phone,
		Company: strings.TrimSpace(in.Visitor.Company)}
	for _, p := range vis.Check() {
		bad[p.Field] = p.Message
	}
	vt, ok := view.VisitType(in.Type)
	if !ok || !vt.Enabled {
		bad["type"] = "no visit type with this key is turned on"
	}
	v := protocol.Visit{ID: in.ID, Status: string(passrule.CheckedIn), CheckedInAt: &in.At, WaitingSince: &in.At, Uses: 1,
		ForVisitID: in.ID, Rules: protocol.Rules{GateIDs: []string{}}, Type: in.Type, Source: "walk_in",
		VisitorID: in.VisitorID, VisitorName: vis.Name, VisitorEmail: vis.Email, VisitorPhone: vis.Phone, VisitorCompany: vis.Company}
	switch {
	case in.HostID != "" && in.TeamID != "":
		bad["host_id"] = "give a host or a team, not both"
	case in.HostID != "":
		p, ok := view.Person(in.HostID)
		switch {
		case !ok:
			bad["host_id"] = "no person with this ID"
		case !p.Active:
			bad["host_id"] = p.Name + " is deactivated and cannot receive visits"
		}
		v.Audience, v.HostID, v.HostName = "person", p.ID, p.Name
	case in.TeamID != "":
		t, ok := k.Team(in.TeamID)
		if !ok {
			bad["team_id"] = "no team with this ID receives visits here"
		}
		v.Audience, v.TeamID, v.TeamName, v.NeedsSomeone = "team", t.ID, t.Name, true
	default:
		v.Audience, v.NeedsSomeone = "desk", true
	}
	if in.VisitorID != "" && !ids.Valid(ids.Visitor, in.VisitorID) {
		bad["visitor_id"] = "must be a visitor ID"
	}
	if len(bad) > 0 {
		return kiosk.Visit{}, &kiosk.ValidationError{Fields: bad}
	}
	f := protocol.Fact{Kind: protocol.FactWalkIn, At: in.At, VisitID: in.ID, DeviceID: in.DeviceID,
		WalkIn: &protocol.WalkIn{Type: in.Type, HostID: in.HostID, TeamID: in.TeamID, VisitorID: in.VisitorID,
			Visitor:      protocol.WalkInVisitor{Name: vis.Name, Email: vis.Email, Phone: vis.Phone, Company: vis.Company},
			CustomFields: in.CustomFields}}
	if err := k.record(f, v); err != nil {
		return kiosk.Visit{}, err
	}
	return k.visit(k.c.View(), v), nil
}

// CheckIn checks an invited visitor in at the desk, deciding as a gate
// does (gate.DecideAtDesk).
func (k *kioskStore) CheckIn(ctx context.Context, in kiosk.CheckIn) (kiosk.Visit, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	view := k.c.View()
	var d gate.Decision
	switch {
	case in.Token != "":
		d = gate.DecideAtDesk(view, k.siteID, in.Token, in.At)
	case in.Code != "":
		v, ok := view.VisitByCode(in.Code)
		if !ok {
			return kiosk.Visit{}, kiosk.ErrNotFound
		}
		d = gate.DecideVisitAtDesk(view, k.siteID, v.ID, in.At)
	default:
		return kiosk.Visit{}, kiosk.ErrNotFound
	}
	switch {
	case d.Kind == protocol.FactReEntry:
		return kiosk.Visit{}, &kiosk.StateError{Action: "check_in", Status: string(passrule.CheckedOut),
			Detail: "the visit is checked out; it cannot be checked in again at the desk"}
	case !d.Admit():
		return kiosk.Visit{}, &kiosk.RefusedError{Reason: d.Reason}
	}
	v := d.Visits[0]
	v.WaitingSince = &in.At
	v.NeedsSomeone = v.HostID == "" // as the cloud's check-in: nobody has taken it
	f := protocol.Fact{Kind: protocol.FactDeskCheckIn, At: in.At, VisitID: v.ID, DeviceID: in.DeviceID}
	if d.PassVisitID != "" && d.PassVisitID != v.ID {
		f.PassVisitID = d.PassVisitID
	}
	if err := k.record(f, v); err != nil {
		return kiosk.Visit{}, err
	}
	return k.visit(k.c.View(), v), nil
}

// deskVisit reads a visit for a desk write.
func deskVisit(view *cache.View, id string) (protocol.Visit, error) {
	v, ok := view.Visit(id)
	if !ok {
		return protocol.Visit{}, kiosk.ErrNotFound
	}
	return v, nil
}

func (k *kioskStore) CheckOut(ctx context.Context, visitID string, by kiosk.Desk) (kiosk.Visit, error) {
	at := by.At
	k.mu.Lock()
	defer k.mu.Unlock()
	v, err := deskVisit(k.c.View(), visitID)
	if err != nil {
		return kiosk.Visit{}, err
	}
	if v.Status != string(passrule.CheckedIn) {
		return kiosk.Visit{}, &kiosk.StateError{Action: "check_out", Status: v.Status, Detail: "only a checked-in visit can be checked out"}
	}
	v.Status, v.CheckedOutAt, v.NeedsSomeone = string(passrule.CheckedOut), &at, false
	if err := k.record(protocol.Fact{Kind: protocol.FactDeskCheckOut, At: at, VisitID: v.ID, DeviceID: by.DeviceID}, v); err != nil {
		return kiosk.Visit{}, err
	}
	return k.visit(k.c.View(), v), nil
}

// Take gives a waiting visit its lead host.
func (k *kioskStore) Take(ctx context.Context, visitID, personID string, by kiosk.Desk) (kiosk.Visit, error) {
	at := by.At
	k.mu.Lock()
	defer k.mu.Unlock()
	view := k.c.View()
	v, err := deskVisit(view, visitID)
	if err != nil {
		return kiosk.Visit{}, err
	}
	p, ok := view.Person(personID)
	if !ok || !p.Active {
		return kiosk.Visit{}, kiosk.ErrNotFound
	}
	if v.HostID != "" || !v.NeedsSomeone {
		return kiosk.Visit{}, &kiosk.StateError{Action: "take", Status: v.Status, Detail: "the visit has a host already"}
	}
	v.HostID, v.HostName, v.NeedsSomeone = p.ID, p.Name, false
	if err := k.record(protocol.Fact{Kind: protocol.FactTake, At: at, VisitID: v.ID, PersonID: p.ID, DeviceID: by.DeviceID}, v); err != nil {
		return kiosk.Visit{}, err
	}
	return k.visit(k.c.View(), v), nil
}

// handable are the statuses a visit can be handed over in, as the API's.
var handable = []string{string(passrule.Expected), string(passrule.AwaitingApproval), string(passrule.CheckedIn)}

// HandOver passes a visit nobody has taken to reception, a person or a
// team, with the API's rule: a visit with a host is refused.
func (k *kioskStore) HandOver(ctx context.Context, visitID string, to kiosk.Receiver, by kiosk.Desk) (kiosk.Visit, error) {
	at := by.At
	k.mu.Lock()
	defer k.mu.Unlock()
	view := k.c.View()
	v, err := deskVisit(view, visitID)
	if err != nil {
		return kiosk.Visit{}, err
	}
	switch {
	case v.HostID != "":
		return kiosk.Visit{}, &kiosk.StateError{Action: "hand_over", Status: v.Status, Detail: "the visit has a host; change its hosts instead"}
	case !contains(handable, v.Status):
		return kiosk.Visit{}, &kiosk.StateError{Action: "hand_over", Status: v.Status, Detail: "the visit has ended"}
	}
	f := protocol.Fact{Kind: protocol.FactHandOver, At: at, VisitID: v.ID, To: to.To, DeviceID: by.DeviceID}
	// As the API's hand-over: the visit now waits with the receiver; a
	// visit for no one in particular takes the receiving team as its team.
	var team protocol.Team
	switch to.To {
	case protocol.ToReception:
		v.Receiver, v.ReceiverID = protocol.ToReception, ""
	case protocol.ToPerson:
		p, ok := view.Person(to.PersonID)
		if !ok || !p.Active {
			return kiosk.Visit{}, kiosk.ErrNotFound
		}
		f.PersonID = p.ID
		v.Receiver, v.ReceiverID = protocol.ToPerson, p.ID
	case protocol.ToTeam:
		t, ok := k.Team(to.TeamID)
		if !ok {
			return kiosk.Visit{}, kiosk.ErrNotFound
		}
		f.TeamID = t.ID
		v.Receiver, v.ReceiverID = protocol.ToTeam, t.ID
		team = protocol.Team{ID: t.ID, Name: t.Name}
	default:
		return kiosk.Visit{}, errors.New("kiosk: a hand-over goes to reception, a person or a team")
	}
	if v.Audience == "desk" {
		v.TeamID, v.TeamName = team.ID, team.Name
	}
	if v.Status == string(passrule.CheckedIn) {
		v.NeedsSomeone, v.WaitingSince = true, &at // waiting for the new receiver from now
	}
	if err := k.record(f, v); err != nil {
		return kiosk.Visit{}, err
	}
	return k.visit(k.c.View(), v), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
