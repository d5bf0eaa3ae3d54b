package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/contact"
	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
)

// Limits on visit fields (the spec's "Limits" and docs/decisions.md).
const (
	MaxPurposeLen      = 300
	MaxVehiclePlateLen = 16
	MaxNoteLen         = 500
	MaxReasonLen       = 500
	MaxHostIDs         = 10
	MaxVisitSpan       = 92 * 24 * time.Hour
	// MaxVisitAheadDays is how far ahead a visit may be expected: two
	// years, which any real plan fits, and far inside what a pass can
	// carry (passtoken's Unix seconds end in 2106), so every visit accepted
	// can be given its pass.
	MaxVisitAheadDays = 731
)

// PassChannels are the channels a pass can be sent through.
var PassChannels = []string{ChannelEmail, ChannelSMS}

// VisitorInput is the visitor of a new visit.
type VisitorInput struct {
	Name    Optional[string]
	Phone   Optional[string]
	Email   Optional[string]
	Company Optional[string]
}

// VisitInput creates or changes a visit. Create takes every field; PATCH
// takes Type, Purpose, VehiclePlate, ExpectedAt, ExpectedUntil,
// CustomFields and PassRules.
type VisitInput struct {
	SiteID        Optional[string]
	Audience      Optional[string]
	HostID        Optional[string]
	HostIDs       Optional[[]string]
	TeamID        Optional[string]
	Visitor       Optional[*VisitorInput]
	Type          Optional[string]
	ExpectedAt    Optional[*time.Time]
	ExpectedUntil Optional[*time.Time]
	Purpose       Optional[string]
	VehiclePlate  Optional[string]
	CustomFields  Optional[map[string]json.RawMessage]
	PassRules     Optional[*passrule.Rules]
	SendPass      Optional[bool]
	PassChannels  Optional[[]string]
	WalkIn        Optional[bool] // registered at the desk on arrival: checked in at once, no expected times
}

// visitPlan is what validating a VisitInput found: the objects it names.
type visitPlan struct {
	site     Site
	loc      *time.Location
	vt       *VisitType
	form     *form.Form
	hosts    []Host
	team     *Ref
	audience Audience
	fields   map[string]json.RawMessage
	rules    passrule.Rules
	until    *time.Time
	channels []string
}

// endOfDay is the last instant of t's day at the site: the default end of
// a pass.
func endOfDay(t time.Time, loc *time.Location) time.Time { return passrule.EndOfDay(t, loc) }

func (s *Service) siteZone(ctx context.Context, v *ValidationError, t Tenant, field, id string) (Site, *time.Location, error) {
	if !checkID(v, field, ids.Site, id) {
		return Site{}, nil, nil
	}
	site, err := s.store.Site(ctx, t, id)
	if errors.Is(err, ErrNotFound) {
		v.Add(field, "no site with this ID")
		return Site{}, nil, nil
	}
	if err != nil {
		return Site{}, nil, err
	}
	loc, err := loadLocation(site.Timezone)
	if err != nil {
		return Site{}, nil, fmt.Errorf("site %s: time zone %q: %w", site.ID, site.Timezone, err)
	}
	return site, loc, nil
}

// hostIDsOf are the hosts in names, by host_id or host_ids (checkHosts
// refuses both).
func hostIDsOf(in VisitInput) []string {
	if in.HostID.Set {
		return []string{in.HostID.Value}
	}
	return in.HostIDs.Value
}

// readsAhead are the reads by key that planVisit and visitorFor make for
// in (Store.ReadAhead): the site, the hosts whose IDs are well formed (the
// list checkHosts reads), the visit type and, for a secret key, the
// visitor found by contact details.
func readsAhead(a Actor, in VisitInput) ReadsAhead {
	r := ReadsAhead{Site: in.SiteID.Value, VisitType: in.Type.Value}
	if hosts := hostIDsOf(in); !(in.HostID.Set && in.HostIDs.Set) && len(hosts) <= MaxHostIDs {
		for _, id := range hosts {
			if ids.Valid(ids.Person, id) {
				r.People = append(r.People, id)
			}
		}
	}
	if !a.Publishable && in.Visitor.Value != nil {
		r.VisitorEmail, r.VisitorPhone = in.Visitor.Value.Email.Value, in.Visitor.Value.Phone.Value
	}
	return r
}

// checkHosts resolves the audience of a new visit: hosts (lead first),
// team and audience, adding a problem for each field that is wrong.
func (s *Service) checkHosts(ctx context.Context, v *ValidationError, a Actor, in VisitInput, site Site) ([]Host, *Ref, Audience, error) {
	if in.HostID.Set && in.HostIDs.Set {
		v.Add("host_ids", "give host_id or host_ids, not both")
		return nil, nil, "", nil
	}
	hostIDs := hostIDsOf(in)
	field := func(i int) string {
		if in.HostID.Set {
			return "host_id"
		}
		return fmt.Sprintf("host_ids[%d]", i)
	}
	if in.HostIDs.Set && len(hostIDs) == 0 {
		v.Add("host_ids", "must hold at least 1 person; leave it out for a visit for no one in particular")
	}
	if len(hostIDs) > MaxHostIDs {
		v.Add("host_ids", "may hold at most %d people", MaxHostIDs)
		return nil, nil, "", nil
	}
	seen := map[string]int{}
	for i, id := range hostIDs {
		if j, dup := seen[id]; dup {
			v.Add(field(i), "repeats host_ids[%d]", j)
		}
		seen[id] = i
	}
	var hosts []Host
	var wellFormed []string
	for i, id := range hostIDs {
		if checkID(v, field(i), ids.Person, id) {
			wellFormed = append(wellFormed, id)
		}
	}
	if len(wellFormed) > 0 {
		found, err := s.store.People(ctx, a.Tenant, wellFormed)
		if err != nil {
			return nil, nil, "", err
		}
		byID := make(map[string]Person, len(found))
		for _, p := range found {
			byID[p.ID] = p
		}
		for i, id := range hostIDs {
			if !ids.Valid(ids.Person, id) {
				continue
			}
			p, ok := byID[id]
			switch {
			case !ok || a.Publishable && !p.Active:
				// To a publishable key a deactivated person is no one: it
				// may not read people, their names or their state.
				v.Add(field(i), "no person with this ID")
			case !p.Active:
				v.Add(field(i), "%s is deactivated and cannot host visits", p.Name)
			default:
				role := HostRoleCoHost
				if len(hosts) == 0 {
					role = HostRoleLead
				}
				hosts = append(hosts, Host{ID: p.ID, Name: p.Name, Role: role, State: HostStateInvited})
			}
		}
	}
	var team *Ref
	if in.TeamID.Set && checkID(v, "team_id", ids.Team, in.TeamID.Value) {
		tm, err := s.store.Team(ctx, a.Tenant, in.TeamID.Value)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("team_id", "no team with this ID")
		case err != nil:
			return nil, nil, "", err
		case a.Publishable && (tm.Archived || !tm.VisitorsCanChoose || tm.SiteID != "" && tm.SiteID != site.ID && site.ID != ""):
			// One answer for every team a publishable key cannot use, so
			// it learns nothing of the organisation's teams.
			v.Add("team_id", "no team with this ID")
		case tm.Archived:
			v.Add("team_id", "the team is archived")
		case tm.SiteID != "" && tm.SiteID != site.ID && site.ID != "":
			v.Add("team_id", "the team is at another site")
		case a.Publishable && !tm.VisitorsCanChoose:
			v.Add("team_id", "visitors cannot choose this team")
		default:
			team = &Ref{ID: tm.ID, Name: tm.Name}
		}
	}
	audience := AudienceDesk
	switch {
	case len(hostIDs) > 1:
		audience = AudiencePeople
	case len(hostIDs) == 1:
		audience = AudiencePerson
	case in.TeamID.Set:
		audience = AudienceTeam
	}
	if in.Audience.Set && Audience(in.Audience.Value) != audience {
		switch want := Audience(in.Audience.Value); {
		case !want.Valid():
			v.Add("audience", "must be one of person, people, team, desk")
		case want == AudiencePeople && len(hostIDs) == 1:
			audience = AudiencePeople // a lead host alone, others may be added
		default:
			v.Add("audience", "%s does not match the hosts and team given (%s)", want, audience)
		}
	}
	if len(hostIDs) > a.Limits().Hosts {
		return nil, nil, "", &PlanError{Detail: fmt.Sprintf("The %s plan allows at most %d hosts on a visit.", a.Plan, a.Limits().Hosts)}
	}
	return hosts, team, audience, nil
}

// checkRules validates pass rules for a visit at site, field being where
// they came from ("pass_rules").
func (s *Service) checkRules(ctx context.Context, v *ValidationError, t Tenant, field string, r *passrule.Rules, siteID string) error {
	for _, fe := range r.Validate() {
		v.Add(field+"."+fe.Field, "%s", fe.Message)
	}
	if len(r.GateIDs) > passtoken.MaxGates && len(r.GateIDs) <= passrule.MaxGateIDs {
		v.Add(field+".gate_ids", "may name at most %d gates: a pass's QR code holds no more", passtoken.MaxGates)
		return nil
	}
	for i, id := range r.GateIDs {
		f := fmt.Sprintf("%s.gate_ids[%d]", field, i)
		if !checkID(v, f, ids.Gate, id) {
			continue
		}
		g, err := s.store.Gate(ctx, t, id)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add(f, "no gate with this ID")
		case err != nil:
			return err
		case siteID != "" && g.SiteID != siteID:
			v.Add(f, "the gate is at another site")
		}
	}
	return nil
}

// checkFields validates custom field answers against the type's form and
// checks person answers name people of the tenant.
func (s *Service) checkFields(ctx context.Context, v *ValidationError, a Actor, f *form.Form, answers map[string]json.RawMessage, siteID string) (map[string]json.RawMessage, error) {
	norm, problems := f.Validate(answers, form.Options{Public: a.Publishable, SiteID: siteID})
	for _, p := range problems {
		v.Add("custom_fields."+p.Field, "%s", p.Message)
	}
	refs := f.PersonRefs(norm)
	if len(refs) == 0 {
		return norm, nil
	}
	list := make([]string, len(refs))
	for i, r := range refs {
		list[i] = r.ID
	}
	if err := s.checkPeople(ctx, v, a.Tenant, func(i int) string { return "custom_fields." + refs[i].Key }, list); err != nil {
		return nil, err
	}
	return norm, nil
}

func checkVisitor(v *ValidationError, in *VisitorInput) {
	c := contact.Visitor{Name: in.Name.Value, Email: in.Email.Value, Phone: in.Phone.Value, Company: in.Company.Value}
	for _, p := range c.Check() {
		v.Add(p.Field, "%s", p.Message)
	}
}

// checkTimes checks a visit's expected period at a site and returns the
// end, defaulting to the end of expected_at's day there. expected_at may be
// at most MaxVisitAheadDays after now; the end at most MaxVisitSpan after
// expected_at.
func checkTimes(v *ValidationError, now time.Time, at, until *time.Time, loc *time.Location) *time.Time {
	if at == nil {
		return nil
	}
	if at.Sub(now) > MaxVisitAheadDays*24*time.Hour {
		v.Add("expected_at", "may be at most %d days ahead", MaxVisitAheadDays)
	}
	end := until
	if end == nil && loc != nil {
		e := endOfDay(*at, loc)
		end = &e
	}
	if end == nil {
		return nil
	}
	switch {
	case !end.After(*at):
		v.Add("expected_until", "must be after expected_at")
	case end.Sub(*at) > MaxVisitSpan:
		v.Add("expected_until", "may be at most 92 days after expected_at")
	}
	return end
}

func checkChannels(v *ValidationError, field string, channels []string, vis Visitor) {
	if channels == nil {
		return
	}
	if len(channels) == 0 {
		v.Add(field, "must hold at least 1 channel")
	}
	seen := map[string]bool{}
	for i, c := range channels {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !slices.Contains(PassChannels, c):
			v.Add(f, "must be email or sms")
		case seen[c]:
			v.Add(f, "repeats %s", c)
		case c == ChannelEmail && vis.Email == "":
			v.Add(f, "the visitor has no email address")
		case c == ChannelSMS && vis.Phone == "":
			v.Add(f, "the visitor has no phone number")
		}
		seen[c] = true
	}
}

// defaultChannels are the channels a pass goes through when none are
// named: every one the visitor can be reached on.
func defaultChannels(vis Visitor) []string {
	var out []string
	if vis.Email != "" {
		out = append(out, ChannelEmail)
	}
	if vis.Phone != "" {
		out = append(out, ChannelSMS)
	}
	return out
}

// typeRules are the pass rules a visit takes when none are given: the
// type's defaults as the plan allows (none below Growth).
func typeRules(a Actor, vt *VisitType) passrule.Rules {
	if !a.Limits().PassRules || vt == nil {
		return passrule.Rules{GateIDs: []string{}}
	}
	r := vt.PassRules
	r.GateIDs = slices.Clone(r.GateIDs)
	if r.GateIDs == nil {
		r.GateIDs = []string{}
	}
	return r
}

func (s *Service) checkPassRules(ctx context.Context, v *ValidationError, a Actor, r *passrule.Rules, siteID string) error {
	if a.Publishable {
		v.Add("pass_rules", "is not allowed with a publishable key")
		return nil
	}
	if !a.Limits().PassRules {
		return &PlanError{Detail: fmt.Sprintf("Pass rules need the Growth plan or above; the organisation is on %s.", a.Plan)}
	}
	if r == nil {
		v.Add("pass_rules", "must be an object")
		return nil
	}
	return s.checkRules(ctx, v, a.Tenant, "pass_rules", r, siteID)
}

// planVisit validates a new visit's input; it returns a ValidationError
// listing every problem, a PlanError, or what the visit will be made of.
func (s *Service) planVisit(ctx context.Context, a Actor, in VisitInput) (*visitPlan, error) {
	var v ValidationError
	p := &visitPlan{}
	var err error
	if !in.SiteID.Set {
		v.Add("site_id", "is required")
	} else if p.site, p.loc, err = s.siteZone(ctx, &v, a.Tenant, "site_id", in.SiteID.Value); err != nil {
		return nil, err
	}
	if p.hosts, p.team, p.audience, err = s.checkHosts(ctx, &v, a, in, p.site); err != nil {
		return nil, err
	}
	if !in.Visitor.Set || in.Visitor.Value == nil {
		v.Add("visitor", "is required")
	} else {
		checkVisitor(&v, in.Visitor.Value)
	}
	if !in.Type.Set {
		v.Add("type", "is required")
	} else if p.vt, p.form, err = s.usableType(ctx, &v, a.Tenant, "type", in.Type.Value, a.Publishable); err != nil {
		return nil, err
	}
	switch {
	case in.WalkIn.Value:
		if a.Publishable {
			v.Add("walk_in", "is not allowed with a publishable key: walk-ins are registered at the desk")
		}
		if in.ExpectedAt.Set {
			v.Add("expected_at", "must be left out for a walk-in, who is here now")
		}
		if in.ExpectedUntil.Set {
			v.Add("expected_until", "must be left out for a walk-in")
		}
	case !in.ExpectedAt.Set || in.ExpectedAt.Value == nil:
		v.Add("expected_at", "is required unless walk_in is true")
	default:
		p.until = checkTimes(&v, s.Now(), in.ExpectedAt.Value, in.ExpectedUntil.Value, p.loc)
	}
	checkText(&v, "purpose", in.Purpose.Value, false, MaxPurposeLen)
	checkText(&v, "vehicle_plate", in.VehiclePlate.Value, false, MaxVehiclePlateLen)
	if p.form != nil {
		if p.fields, err = s.checkFields(ctx, &v, a, p.form, in.CustomFields.Value, p.site.ID); err != nil {
			return nil, err
		}
	}
	if in.PassRules.Set {
		if err := s.checkPassRules(ctx, &v, a, in.PassRules.Value, p.site.ID); err != nil {
			return nil, err
		}
		if in.PassRules.Value != nil {
			p.rules = *in.PassRules.Value
			if p.rules.GateIDs == nil {
				p.rules.GateIDs = []string{}
			}
		}
	} else {
		p.rules = typeRules(a, p.vt)
	}
	if in.Visitor.Value != nil {
		vis := Visitor{Email: in.Visitor.Value.Email.Value, Phone: in.Visitor.Value.Phone.Value}
		if in.PassChannels.Set {
			checkChannels(&v, "pass_channels", in.PassChannels.Value, vis)
			p.channels = in.PassChannels.Value
		} else {
			p.channels = defaultChannels(vis)
		}
	}
	return p, v.Err()
}

// ValidateVisit checks a new visit's input without creating it.
func (s *Service) ValidateVisit(ctx context.Context, a Actor, in VisitInput) error {
	_, err := s.planVisit(ctx, a, in)
	return err
}

// CreateVisit creates a visit: an invitation with a secret key, a
// pre-registration with a publishable key (awaiting approval when the
// type needs it). The pass is sent unless SendPass is false or the visit
// awaits approval.
//
// The reads that plan it (site, hosts, type, visitor) and its writes are
// one transaction (Service.atomic).
func (s *Service) CreateVisit(ctx context.Context, a Actor, in VisitInput) (v Visit, err error) {
	err = s.atomic(ctx, func(ctx context.Context) error {
		v, err = s.createVisit(ctx, a, in)
		return err
	})
	return v, err
}

func (s *Service) createVisit(ctx context.Context, a Actor, in VisitInput) (Visit, error) {
	s.store.ReadAhead(ctx, a.Tenant, readsAhead(a, in))
	p, err := s.planVisit(ctx, a, in)
	if err != nil {
		return Visit{}, err
	}
	now := s.Now()
	var w VisitWrites
	vis, err := s.visitorFor(ctx, a, in.Visitor.Value, now, &w.Visitor)
	if err != nil {
		return Visit{}, fmt.Errorf("create visit: %w", err)
	}
	vt := s.newVisit(a, in, p, ids.New(ids.Visit), vis, now, now, &w)
	shown, err := s.shown(ctx, a, vt)
	if err != nil {
		return Visit{}, err
	}
	if err := respond(ctx, shown); err != nil {
		return Visit{}, err
	}
	if err := s.store.CreateVisit(ctx, vt, w); err != nil {
		return Visit{}, fmt.Errorf("create visit: %w", err)
	}
	return shown, nil
}

// newVisit makes the visit id that plan p of input in describes, for the
// visitor vis, as POST /visits makes it: an invitation (expected), a
// pre-registration (awaiting approval when its type needs it), or a
// walk-in checked in at at, made now. Its pass goes into w unless
// SendPass is false or the visit awaits approval. A walk-in from the desk
// (Service.ApplyFacts) is made here too, so both paths make one visit.
func (s *Service) newVisit(a Actor, in VisitInput, p *visitPlan, id string, vis Visitor, at, now time.Time, w *VisitWrites) Visit {
	vt := Visit{
		ID: id, Tenant: a.Tenant, Status: VisitExpected, Type: in.Type.Value, Source: SourceInvitation,
		SiteID: p.site.ID, Audience: p.audience, Hosts: p.hosts, Team: p.team, VisitorID: vis.ID, Visitor: vis,
		Purpose: in.Purpose.Value, VehiclePlate: in.VehiclePlate.Value, ExpectedAt: utcPtr(in.ExpectedAt.Value),
		ExpectedUntil: utcPtr(p.until), CustomFields: p.fields, CreatedAt: now, UpdatedAt: now,
	}
	if len(p.hosts) > 0 {
		vt.HostID = p.hosts[0].ID
	} else {
		vt.Receiver = Receiver{Kind: ReceiverReception}
		if p.team != nil {
			vt.Receiver = Receiver{Kind: ReceiverTeam, TeamID: p.team.ID}
		}
	}
	if vt.Hosts == nil {
		vt.Hosts = []Host{}
	}
	if vt.CustomFields == nil {
		vt.CustomFields = map[string]json.RawMessage{}
	}
	vt.Pass = Pass{Rules: p.rules, ForVisitID: vt.ID, Channels: []string{}}
	switch {
	case a.Publishable:
		vt.Source = SourcePreRegistration
		if p.vt != nil && p.vt.NeedsApproval {
			vt.Status = VisitAwaitingApproval
		}
	case in.WalkIn.Value:
		// Here now: checked in at the desk, waiting for someone when
		// nobody hosts the visit. The pass serves re-entry the same day.
		vt.Source, vt.Status, vt.CheckedInAt, vt.NeedsSomeone = SourceWalkIn, VisitCheckedIn, &at, len(vt.Hosts) == 0
		vt.Pass.Uses = 1
		vt.WaitingSince = &at
	}
	if vt.Status != VisitAwaitingApproval && (!in.SendPass.Set || in.SendPass.Value) {
		s.sendPass(&vt, w, vis, p.channels, p.site, now)
	}
	return vt
}

// visitorFor returns the visitor record a new visit or booking uses, and
// puts a new one in *created for the write that stores it. A secret key's
// visit reuses the record matching the contact details given. A
// publishable key's never does: its caller is anonymous, so it gets a new
// self-registered record holding exactly what it sent, and nothing it
// makes (the response, the visitor ID, the pass and every later message
// about the visit) can show or reach what is stored about someone whose
// email or number it typed (docs/decisions.md, "Keys, scopes and what a
// publishable key may see").
func (s *Service) visitorFor(ctx context.Context, a Actor, vin *VisitorInput, now time.Time, created **Visitor) (Visitor, error) {
	if !a.Publishable {
		vis, err := s.store.FindVisitor(ctx, a.Tenant, vin.Email.Value, vin.Phone.Value)
		if !errors.Is(err, ErrNotFound) {
			return vis, err
		}
	}
	vis := Visitor{ID: ids.New(ids.Visitor), Tenant: a.Tenant, Name: vin.Name.Value, Phone: vin.Phone.Value,
		Email: vin.Email.Value, Company: vin.Company.Value, SelfRegistered: a.Publishable, CreatedAt: now, UpdatedAt: now}
	*created = &vis
	return vis, nil
}

// sameVisitor reports whether two visitor records, with the IDs their
// visits or bookings name, are one visitor: the same record, or records
// with the same email (any case) when both have one, else the same phone
// when both have one. A visitor who booked themselves through a
// publishable key has a record of their own (see visitorFor) and is still
// the visitor a host invited with the same address.
func sameVisitor(a, b Visitor, aID, bID string) bool {
	switch {
	case aID == bID:
		return true
	case a.ID == "" || b.ID == "": // erased
		return false
	case a.Email != "" && b.Email != "":
		return Fold(a.Email) == Fold(b.Email)
	}
	return a.Phone != "" && a.Phone == b.Phone
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

// sendPass records one outbox message per channel and notes the sending
// on the pass. Test-mode messages are held: they never leave the system.
func (s *Service) sendPass(vt *Visit, w *VisitWrites, vis Visitor, channels []string, site Site, now time.Time) {
	if len(channels) == 0 {
		return
	}
	status := MessageQueued
	if vt.Tenant.Mode == ModeTest {
		status = MessageHeld
	}
	when := "today"
	if vt.ExpectedAt != nil {
		when = vt.ExpectedAt.Format(time.RFC3339)
	}
	for _, c := range channels {
		m := Message{ID: ids.New(ids.Message), Tenant: vt.Tenant, VisitID: vt.ID, Channel: c, Status: status, CreatedAt: now,
			Subject: "Your visitor pass for " + site.Name,
			Body: fmt.Sprintf("Hello %s, your pass for %s (%s) is ready. Show its QR code at the gate, or give the code %s at reception: %s",
				vis.Name, site.Name, when, ids.FormatShortCode(ids.ShortCode(vt.Pass.ForVisitID)), s.PassLink(vt.Tenant, vt.Pass.ForVisitID))}
		switch c {
		case ChannelEmail:
			m.To = vis.Email
		case ChannelSMS:
			m.To = vis.Phone
		}
		w.Messages = append(w.Messages, m)
		if !slices.Contains(vt.Pass.Channels, c) {
			vt.Pass.Channels = append(vt.Pass.Channels, c)
		}
	}
	vt.Pass.LastSentAt = &now
}

// hidden reports whether a record created at created is older than the
// actor's plan lets it see.
func (s *Service) historyStart(a Actor) *time.Time {
	days := a.Limits().HistoryDays
	if days == 0 {
		return nil
	}
	t := s.Now().AddDate(0, 0, -days)
	return &t
}

func (s *Service) checkHistory(a Actor, created time.Time) error {
	if start := s.historyStart(a); start != nil && created.Before(*start) {
		return &PlanError{Detail: fmt.Sprintf("This record is older than the %s plan's %d days of history.", a.Plan, a.Limits().HistoryDays)}
	}
	return nil
}

// redact leaves out answers to sensitive and masked questions: no API
// response carries them.
func (s *Service) redact(ctx context.Context, t Tenant, forms map[string]*form.Form, v *Visit) error {
	if len(v.CustomFields) == 0 {
		v.CustomFields = map[string]json.RawMessage{} // nothing to leave out: no need to read the form
		return nil
	}
	f, ok := forms[v.Type]
	if !ok {
		vt, err := s.store.VisitType(ctx, t, v.Type)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil {
			if f, err = parseForm(vt.Form); err != nil {
				return fmt.Errorf("visit type %s: stored form: %w", vt.Key, err)
			}
		}
		forms[v.Type] = f
	}
	if f == nil {
		v.CustomFields = map[string]json.RawMessage{} // no form to tell what is sensitive: show nothing
		return nil
	}
	v.CustomFields = f.Redact(v.CustomFields)
	if v.CustomFields == nil {
		v.CustomFields = map[string]json.RawMessage{}
	}
	return nil
}

// Visit returns a visit as the API shows it.
func (s *Service) Visit(ctx context.Context, a Actor, id string) (Visit, error) {
	v, err := s.store.Visit(ctx, a.Tenant, id)
	if err != nil {
		return Visit{}, err
	}
	return s.shown(ctx, a, v)
}

// respondVisit hands v, as the API shows it, to the reply of the request
// ctx goes with (respond): a write calls it with the visit it answers with.
func (s *Service) respondVisit(ctx context.Context, a Actor, v Visit) error {
	if replyOf(ctx) == nil {
		return nil
	}
	shown, err := s.shown(ctx, a, v)
	if err != nil {
		return err
	}
	return respond(ctx, shown)
}

func (s *Service) shown(ctx context.Context, a Actor, v Visit) (Visit, error) {
	if err := s.checkHistory(a, v.CreatedAt); err != nil {
		return Visit{}, err
	}
	if err := s.redact(ctx, a.Tenant, map[string]*form.Form{}, &v); err != nil {
		return Visit{}, err
	}
	if a.Publishable {
		v = publicView(v)
	}
	return v, nil
}

// publicView is a visit as a publishable key sees the one it made: what
// it sent, and what the service decided, but no name of a host or team it
// named by ID. A publishable key may not read people or teams (the spec's
// rule 3), and a name in the answer would be that read. The visitor is the
// record the request made from what it sent (see visitorFor).
func publicView(v Visit) Visit {
	hosts := make([]Host, len(v.Hosts))
	for i, h := range v.Hosts {
		h.Name = ""
		hosts[i] = h
	}
	v.Hosts = hosts
	for _, r := range []**Ref{&v.Team, &v.AskedFor} {
		if *r != nil {
			*r = &Ref{ID: (*r).ID}
		}
	}
	return v
}

// ListVisits returns a page of visits as the API shows them, leaving out
// records older than the plan's history.
func (s *Service) ListVisits(ctx context.Context, a Actor, f VisitFilter, p Page) ([]Visit, bool, error) {
	f.CreatedAfter = s.historyStart(a)
	vs, more, err := s.store.ListVisits(ctx, a.Tenant, f, p)
	if err != nil {
		return nil, false, err
	}
	forms := map[string]*form.Form{}
	for i := range vs {
		if err := s.redact(ctx, a.Tenant, forms, &vs[i]); err != nil {
			return nil, false, err
		}
	}
	return vs, more, nil
}

// editable are the statuses a PATCH may change.
var editable = []VisitStatus{VisitExpected, VisitAwaitingApproval, VisitCheckedIn}

// UpdateVisit changes a visit's type, purpose, plate, expected times,
// custom fields and pass rules, with the same rules as on create.
func (s *Service) UpdateVisit(ctx context.Context, a Actor, id string, in VisitInput) (Visit, error) {
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return Visit{}, err
	}
	var v ValidationError
	site, loc, err := s.siteZone(ctx, &v, a.Tenant, "site_id", cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	typeKey := cur.Type
	var f *form.Form
	if in.Type.Set {
		typeKey = in.Type.Value
	}
	if in.Type.Set || in.CustomFields.Set {
		if _, f, err = s.usableType(ctx, &v, a.Tenant, "type", typeKey, a.Publishable); err != nil {
			return Visit{}, err
		}
	}
	at, until := cur.ExpectedAt, cur.ExpectedUntil
	if in.ExpectedAt.Set {
		if in.ExpectedAt.Value == nil {
			v.Add("expected_at", "may not be null")
		}
		at = in.ExpectedAt.Value
		if !in.ExpectedUntil.Set {
			until = nil // follows expected_at: the end of its day
		}
	}
	if in.ExpectedUntil.Set {
		until = in.ExpectedUntil.Value
	}
	if in.ExpectedAt.Set || in.ExpectedUntil.Set {
		if at == nil {
			v.Add("expected_until", "cannot be set on a visit without expected_at")
		}
		until = checkTimes(&v, s.Now(), at, until, loc)
	}
	if in.Purpose.Set {
		checkText(&v, "purpose", in.Purpose.Value, false, MaxPurposeLen)
	}
	if in.VehiclePlate.Set {
		checkText(&v, "vehicle_plate", in.VehiclePlate.Value, false, MaxVehiclePlateLen)
	}
	var fields map[string]json.RawMessage
	if f != nil {
		// The stored answers include sensitive ones the caller cannot see.
		full, err := s.store.Visit(ctx, a.Tenant, id)
		if err != nil {
			return Visit{}, err
		}
		answers := full.CustomFields
		if in.CustomFields.Set {
			// The answers given replace the ones the caller can see; hidden
			// answers the form still asks for are kept unless given again.
			answers = maps.Clone(in.CustomFields.Value)
			shown := f.Redact(full.CustomFields)
			for _, k := range f.Keys() {
				raw, stored := full.CustomFields[k]
				if _, given := answers[k]; stored && !given {
					if _, visible := shown[k]; !visible {
						answers[k] = raw
					}
				}
			}
		}
		if fields, err = s.checkFields(ctx, &v, a, f, answers, site.ID); err != nil {
			return Visit{}, err
		}
	}
	if in.PassRules.Set {
		if err := s.checkPassRules(ctx, &v, a, in.PassRules.Value, site.ID); err != nil {
			return Visit{}, err
		}
	}
	if err := v.Err(); err != nil {
		return Visit{}, err
	}
	updated, err := s.store.UpdateVisit(ctx, a.Tenant, id, func(vt *Visit, _ *VisitWrites) error {
		if !slices.Contains(editable, vt.Status) {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "change"}
		}
		vt.Type = typeKey
		if in.Purpose.Set {
			vt.Purpose = in.Purpose.Value
		}
		if in.VehiclePlate.Set {
			vt.VehiclePlate = in.VehiclePlate.Value
		}
		if in.ExpectedAt.Set || in.ExpectedUntil.Set {
			vt.ExpectedAt, vt.ExpectedUntil = utcPtr(at), utcPtr(until)
		}
		if fields != nil {
			vt.CustomFields = fields
		}
		if in.PassRules.Set && in.PassRules.Value != nil {
			vt.Pass.Rules = *in.PassRules.Value
			if vt.Pass.Rules.GateIDs == nil {
				vt.Pass.Rules.GateIDs = []string{}
			}
		}
		vt.UpdatedAt = s.Now()
		return nil
	})
	if err != nil {
		return Visit{}, err
	}
	return s.shown(ctx, a, updated)
}

// transition applies fn to a visit the actor may see, inside the store's
// transaction, and returns the visit as shown.
func (s *Service) transition(ctx context.Context, a Actor, id string, fn func(*Visit, *VisitWrites) error) (v Visit, err error) {
	err = s.atomic(ctx, func(ctx context.Context) error {
		if _, err := s.Visit(ctx, a, id); err != nil {
			return err
		}
		v, err = s.apply(ctx, a, id, fn)
		return err
	})
	return v, err
}

// apply is transition for callers that have already read the visit
// through Visit (and so checked the plan's history).
func (s *Service) apply(ctx context.Context, a Actor, id string, fn func(*Visit, *VisitWrites) error) (Visit, error) {
	v, err := s.store.UpdateVisit(ctx, a.Tenant, id, func(v *Visit, w *VisitWrites) error {
		if err := fn(v, w); err != nil {
			return err
		}
		v.UpdatedAt = s.Now()
		return s.respondVisit(ctx, a, *v)
	})
	if err != nil {
		return Visit{}, err
	}
	return s.shown(ctx, a, v)
}

// CheckInInput is a check-in at a gate or at the desk.
type CheckInInput struct {
	GateID   string // empty: checked in at the desk, no gate
	Override bool   // admit despite pass rules, except ended
}

// decide runs the pass-rule decision for visit v at gate g (nil: the desk).
func decide(v *Visit, g *Gate, loc *time.Location, now time.Time) passrule.Reason {
	in := passrule.Input{Rules: v.Pass.Rules, Status: passrule.Status(v.Status), Revoked: v.Pass.Revoked,
		VisitSiteID: v.SiteID, GateSiteID: v.SiteID, Uses: v.Pass.Uses, Location: loc, Now: now}
	if g != nil {
		in.GateID, in.GateSiteID = g.ID, g.SiteID
	} else {
		in.Rules.GateIDs = nil // at the desk no gate applies
	}
	if v.ExpectedAt != nil {
		in.ExpectedAt = *v.ExpectedAt
	}
	if v.ExpectedUntil != nil {
		in.ExpectedUntil = *v.ExpectedUntil
	} else if v.CheckedInAt != nil && loc != nil {
		in.ExpectedUntil = endOfDay(*v.CheckedInAt, loc) // a walk-in's pass lasts their day
	}
	return passrule.Decide(in)
}

// CheckIn admits a visitor: an expected visit whose pass rules allow it
// (or override them, except ended) becomes checked_in.
//
// The reads that decide it and its writes are one transaction.
func (s *Service) CheckIn(ctx context.Context, a Actor, id string, in CheckInInput) (v Visit, err error) {
	err = s.atomic(ctx, func(ctx context.Context) error {
		v, err = s.checkIn(ctx, a, id, in)
		return err
	})
	return v, err
}

func (s *Service) checkIn(ctx context.Context, a Actor, id string, in CheckInInput) (Visit, error) {
	loc, gate, err := s.entry(ctx, a, id, in.GateID)
	if err != nil {
		return Visit{}, err
	}
	return s.apply(ctx, a, id, func(vt *Visit, w *VisitWrites) error {
		now := s.Now()
		reason := decide(vt, gate, loc, now)
		switch {
		case vt.Status == VisitCheckedIn || vt.Status == VisitCheckedOut:
			return &StateError{Object: "visit", State: string(vt.Status), Action: "check in"}
		case vt.Status == VisitAwaitingApproval:
			return &PassRuleError{Reason: string(passrule.NotYet), Status: vt.Status,
				Detail: "The visit is awaiting approval; approve it before checking in."}
		case reason == passrule.Ended:
			return &PassRuleError{Reason: string(reason), Status: vt.Status,
				Detail: fmt.Sprintf("The pass no longer works: the visit is %s.", vt.Status)}
		case reason != passrule.Admit && !in.Override:
			return &PassRuleError{Reason: string(reason), Status: vt.Status, Detail: refusalDetail(reason)}
		}
		if reason != passrule.Admit {
			w.Audit = append(w.Audit, overrideEvent(ctx, a, vt.ID, vt.ID, reason, gate, now))
		}
		vt.Status, vt.CheckedInAt, vt.NeedsSomeone, vt.WaitingSince = VisitCheckedIn, &now, len(vt.Hosts) == 0, &now
		vt.Pass.Uses++
		if gate != nil {
			vt.GateID = gate.ID
		}
		return nil
	})
}

// overrideEvent records that actor a admitted a visitor despite the pass
// rules' refusal: the visit admitted (objectID), the visit holding the
// pass, the reason overridden and the gate.
func overrideEvent(ctx context.Context, a Actor, objectID, passVisitID string, reason passrule.Reason, gate *Gate, now time.Time) AuditEvent {
	detail := map[string]string{"reason": string(reason), "pass_visit_id": passVisitID}
	if gate != nil {
		detail["gate_id"] = gate.ID
	}
	raw, _ := json.Marshal(detail) // a map of strings always marshals
	return AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: a.Tenant, Action: AuditPassRulesOverridden,
		ActorKind: ActorKey, ActorID: a.KeyID, ObjectType: "visit", ObjectID: objectID,
		RequestID: RequestID(ctx), Detail: raw, CreatedAt: now}
}

// AuditEvents returns a page of the audit trail, leaving out records
// older than the plan's history.
func (s *Service) AuditEvents(ctx context.Context, a Actor, f AuditFilter, p Page) ([]AuditEvent, bool, error) {
	f.CreatedAfter = s.historyStart(a)
	return s.store.ListAuditEvents(ctx, a.Tenant, f, p)
}

func refusalDetail(r passrule.Reason) string {
	switch r {
	case passrule.WrongGate:
		return "The pass does not open this gate."
	case passrule.NotYet:
		return "The pass does not work yet."
	case passrule.Expired:
		return "The pass has expired."
	case passrule.OutsideHours:
		return "The pass works only within its daily hours at the site."
	case passrule.Used:
		return "The single-use pass has been used."
	}
	return "The pass rules refuse entry."
}

// CheckOut records that a checked-in visitor left.
func (s *Service) CheckOut(ctx context.Context, a Actor, id string) (Visit, error) {
	return s.transition(ctx, a, id, func(vt *Visit, _ *VisitWrites) error {
		if vt.Status != VisitCheckedIn {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "check out"}
		}
		now := s.Now()
		vt.Status, vt.CheckedOutAt, vt.NeedsSomeone = VisitCheckedOut, &now, false
		return nil
	})
}

// Decide approves or denies a visit awaiting approval, recording the
// decision; an approved visit's pass is sent.
func (s *Service) Decide(ctx context.Context, a Actor, id, outcome, reason string) (Visit, error) {
	var v ValidationError
	checkText(&v, "reason", reason, false, MaxReasonLen)
	if err := v.Err(); err != nil {
		return Visit{}, err
	}
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return Visit{}, err
	}
	site, err := s.store.Site(ctx, a.Tenant, cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	action := "approve"
	if outcome == OutcomeDenied {
		action = "deny"
	}
	return s.apply(ctx, a, id, func(vt *Visit, w *VisitWrites) error {
		if vt.Status != VisitAwaitingApproval {
			return &StateError{Object: "visit", State: string(vt.Status), Action: action}
		}
		now := s.Now()
		vt.Decision = &Decision{Outcome: outcome, DecidedAt: now, DecidedBy: a.KeyID, Reason: reason}
		if outcome == OutcomeDenied {
			vt.Status = VisitDenied
			return nil
		}
		vt.Status = VisitExpected
		s.sendPass(vt, w, vt.Visitor, defaultChannels(vt.Visitor), site, now)
		return nil
	})
}

// Cancel cancels a visit that has not started, and the booking it came
// from.
func (s *Service) Cancel(ctx context.Context, a Actor, id string) (Visit, error) {
	v, err := s.transition(ctx, a, id, func(vt *Visit, _ *VisitWrites) error {
		if vt.Status != VisitExpected && vt.Status != VisitAwaitingApproval {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "cancel"}
		}
		now := s.Now()
		vt.Status, vt.CancelledAt = VisitCancelled, &now
		return nil
	})
	if err != nil {
		return Visit{}, err
	}
	return v, s.releaseBooking(ctx, v)
}

// ResendPass sends a visit's pass again, through channels or every channel
// the visitor can be reached on.
func (s *Service) ResendPass(ctx context.Context, a Actor, id string, channels []string) (Visit, error) {
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return Visit{}, err
	}
	var v ValidationError
	checkChannels(&v, "channels", channels, cur.Visitor)
	if err := v.Err(); err != nil {
		return Visit{}, err
	}
	if channels == nil {
		channels = defaultChannels(cur.Visitor)
	}
	site, err := s.store.Site(ctx, a.Tenant, cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	return s.apply(ctx, a, id, func(vt *Visit, w *VisitWrites) error {
		if vt.Status != VisitExpected && vt.Status != VisitCheckedIn && vt.Status != VisitCheckedOut || vt.Pass.Revoked {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "send the pass of"}
		}
		if len(channels) == 0 {
			return &ValidationError{Fields: []FieldError{{Field: "channels", Message: "the visitor has no email address or phone number to send the pass to"}}}
		}
		s.sendPass(vt, w, vt.Visitor, channels, site, s.Now())
		return nil
	})
}

// Messages returns a page of the tenant's outbox, leaving out records
// older than the plan's history.
func (s *Service) Messages(ctx context.Context, a Actor, f MessageFilter, p Page) ([]Message, bool, error) {
	f.CreatedAfter = s.historyStart(a)
	return s.store.ListMessages(ctx, a.Tenant, f, p)
}
