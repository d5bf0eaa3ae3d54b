package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
)

// This file holds the operations that move a visit somewhere else:
// reschedule (to another time or a booking), hand-over (to another
// receiver), re-enter (a new entry on the same pass), and erasing a
// visitor.

// ChannelConsole is the channel of notices to people inside the
// organisation: they are shown in the front-desk console and the host's
// app, addressed to a person, a team or reception. They never leave the
// system.
const ChannelConsole = "console"

// Reception is the console address of the front desk.
const Reception = "reception"

// RescheduleInput books a visitor in for another time (ExpectedAt and the
// fields that go with it) or onto a booking (BookingID).
type RescheduleInput struct {
	ExpectedAt    Optional[*time.Time]
	ExpectedUntil Optional[*time.Time]
	HostID        Optional[string]
	HostIDs       Optional[[]string]
	TeamID        Optional[string]
	Purpose       Optional[string]
	SendPass      Optional[bool]
	PassChannels  Optional[[]string]
	BookingID     Optional[string]
	Note          Optional[string]
}

// reschedulable are the statuses reschedule closes.
var reschedulable = []VisitStatus{VisitExpected, VisitAwaitingApproval}

// Reschedule closes a visit that is expected or awaiting approval and
// replaces it with a new invitation for the same visitor and type, or with
// a booking made for the visitor. The closed visit is cancelled, names its
// replacement in RescheduledTo, and its pass stops working at once.
func (s *Service) Reschedule(ctx context.Context, a Actor, id string, in RescheduleInput) (Visit, error) {
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return Visit{}, err
	}
	var v ValidationError
	checkText(&v, "note", in.Note.Value, false, MaxNoteLen)
	switch {
	case in.ExpectedAt.Set && in.BookingID.Set:
		v.Add("booking_id", "give expected_at or booking_id, not both")
		return Visit{}, v.Err()
	case in.BookingID.Set:
		for _, f := range []struct {
			name string
			set  bool
		}{{"expected_until", in.ExpectedUntil.Set}, {"host_id", in.HostID.Set}, {"host_ids", in.HostIDs.Set},
			{"team_id", in.TeamID.Set}, {"purpose", in.Purpose.Set}, {"send_pass", in.SendPass.Set},
			{"pass_channels", in.PassChannels.Set}} {
			if f.set {
				v.Add(f.name, "goes with expected_at; with booking_id the booking sets it")
			}
		}
		return s.rescheduleToBooking(ctx, a, cur, in, &v)
	case !in.ExpectedAt.Set || in.ExpectedAt.Value == nil:
		v.Add("expected_at", "is required unless booking_id is given: give exactly one of them")
		return Visit{}, v.Err()
	}
	return s.rescheduleToTime(ctx, a, cur, in, &v)
}

func (s *Service) rescheduleToTime(ctx context.Context, a Actor, cur Visit, in RescheduleInput, v *ValidationError) (Visit, error) {
	site, loc, err := s.siteZone(ctx, v, a.Tenant, "site_id", cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	until := checkTimes(v, s.Now(), in.ExpectedAt.Value, in.ExpectedUntil.Value, loc)
	if in.Purpose.Set {
		checkText(v, "purpose", in.Purpose.Value, false, MaxPurposeLen)
	}
	if in.PassChannels.Set {
		checkChannels(v, "pass_channels", in.PassChannels.Value, cur.Visitor)
	}
	// The new visit is for the hosts or team given, or for whoever this
	// visit is for now.
	var hosts []Host
	var team *Ref
	var audience Audience
	newHosts := in.HostID.Set || in.HostIDs.Set || in.TeamID.Set
	if newHosts {
		if hosts, team, audience, err = s.checkHosts(ctx, v, a, VisitInput{HostID: in.HostID, HostIDs: in.HostIDs, TeamID: in.TeamID}, site); err != nil {
			return Visit{}, err
		}
	}
	if err := v.Err(); err != nil {
		return Visit{}, err
	}
	channels := in.PassChannels.Value
	if !in.PassChannels.Set {
		channels = defaultChannels(cur.Visitor)
	}
	var next Visit
	closed, err := s.store.UpdateVisit(ctx, a.Tenant, cur.ID, func(vt *Visit, w *VisitWrites) error {
		if !slices.Contains(reschedulable, vt.Status) {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "reschedule"}
		}
		now := s.Now()
		next = Visit{
			ID: ids.New(ids.Visit), Tenant: vt.Tenant, Status: VisitExpected, Type: vt.Type, Source: SourceInvitation,
			SiteID: vt.SiteID, Audience: vt.Audience, Hosts: currentHosts(vt.Hosts), Team: vt.Team, HostID: vt.HostID,
			VisitorID: vt.VisitorID, Visitor: vt.Visitor, Purpose: vt.Purpose, VehiclePlate: vt.VehiclePlate,
			ExpectedAt: utcPtr(in.ExpectedAt.Value), ExpectedUntil: utcPtr(until), CustomFields: vt.CustomFields,
			Receiver: vt.Receiver, CreatedAt: now, UpdatedAt: now,
		}
		if newHosts {
			next.Hosts, next.Team, next.Audience, next.HostID, next.Receiver = hosts, team, audience, "", Receiver{}
			if len(hosts) > 0 {
				next.HostID = hosts[0].ID
			} else if team != nil {
				next.Receiver = Receiver{Kind: ReceiverTeam, TeamID: team.ID}
			} else {
				next.Receiver = Receiver{Kind: ReceiverReception}
			}
		}
		if next.Hosts == nil {
			next.Hosts = []Host{}
		}
		if in.Purpose.Set {
			next.Purpose = in.Purpose.Value
		}
		rules := vt.Pass.Rules
		rules.GateIDs = slices.Clone(rules.GateIDs)
		next.Pass = Pass{Rules: rules, ForVisitID: next.ID, Channels: []string{}}
		if !in.SendPass.Set || in.SendPass.Value {
			s.sendPass(&next, w, vt.Visitor, channels, site, now)
		}
		notices, err := s.tellReceivers(ctx, next, "A visit has been rescheduled",
			fmt.Sprintf("%s will now come to %s at %s.", visitorName(next.Visitor), site.Name, next.ExpectedAt.In(loc).Format("Mon 2 Jan 2006 15:04 MST")), now)
		if err != nil {
			return err
		}
		w.Messages = append(w.Messages, notices...)
		w.Visits = append(w.Visits, next)
		vt.Status, vt.CancelledAt, vt.NeedsSomeone = VisitCancelled, &now, false
		vt.RescheduledTo = &Rescheduled{VisitID: next.ID, At: now, Note: in.Note.Value}
		vt.Pass.Revoked = true
		vt.UpdatedAt = now
		return s.respondVisit(ctx, a, *vt)
	})
	if err != nil {
		return Visit{}, err
	}
	if err := s.releaseBooking(ctx, closed); err != nil {
		return Visit{}, err
	}
	return s.shown(ctx, a, closed)
}

// currentHosts are the hosts a rescheduled visit keeps: the lead and
// co-hosts, told afresh; people reception asked to see the visitor are
// not carried over.
func currentHosts(hs []Host) []Host {
	var out []Host
	for _, h := range hs {
		if h.Role == HostRoleAsked {
			continue
		}
		out = append(out, Host{ID: h.ID, Name: h.Name, Role: h.Role, State: HostStateInvited})
	}
	return out
}

func visitorName(v Visitor) string {
	if v.Name == "" {
		return "A visitor"
	}
	return v.Name
}

func (s *Service) rescheduleToBooking(ctx context.Context, a Actor, cur Visit, in RescheduleInput, v *ValidationError) (Visit, error) {
	bid := in.BookingID.Value
	if checkID(v, "booking_id", ids.Booking, bid) {
		b, err := s.store.Booking(ctx, a.Tenant, bid)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("booking_id", "no booking with this ID")
		case err != nil:
			return Visit{}, err
		default:
			s.expire(&b)
			switch {
			case b.Status != BookingPending && b.Status != BookingConfirmed:
				v.Add("booking_id", "the booking is %s; only a pending or confirmed booking can replace a visit", b.Status)
			case !sameVisitor(b.Visitor, cur.Visitor, b.VisitorID, cur.VisitorID):
				v.Add("booking_id", "the booking is for another visitor")
			case b.VisitID == cur.ID || cur.BookingID == b.ID:
				v.Add("booking_id", "this visit comes from that booking")
			}
		}
	}
	if err := v.Err(); err != nil {
		return Visit{}, err
	}
	closed, err := s.store.UpdateVisit(ctx, a.Tenant, cur.ID, func(vt *Visit, _ *VisitWrites) error {
		if !slices.Contains(reschedulable, vt.Status) {
			return &StateError{Object: "visit", State: string(vt.Status), Action: "reschedule"}
		}
		now := s.Now()
		vt.Status, vt.CancelledAt, vt.NeedsSomeone = VisitCancelled, &now, false
		vt.RescheduledTo = &Rescheduled{BookingID: bid, At: now, Note: in.Note.Value}
		vt.Pass.Revoked = true
		vt.UpdatedAt = now
		return s.respondVisit(ctx, a, *vt)
	})
	if err != nil {
		return Visit{}, err
	}
	if err := s.releaseBooking(ctx, closed); err != nil {
		return Visit{}, err
	}
	return s.shown(ctx, a, closed)
}

// tellReceivers makes the notices that tell whoever a visit is for about
// it: each host (by email when they have an address, else in the
// console), else the team or reception receiving it.
func (s *Service) tellReceivers(ctx context.Context, vt Visit, subject, body string, now time.Time) ([]Message, error) {
	var to []Receiver
	for _, h := range vt.Hosts {
		to = append(to, Receiver{Kind: ReceiverPerson, PersonID: h.ID})
	}
	if len(to) == 0 {
		to = append(to, vt.Receiver)
	}
	return s.notices(ctx, vt, to, subject, body, now)
}

// notices makes one message per receiver: an email to a person with an
// address, else a console notice addressed to the person, team or
// reception.
func (s *Service) notices(ctx context.Context, vt Visit, to []Receiver, subject, body string, now time.Time) ([]Message, error) {
	var personIDs []string
	for _, r := range to {
		if r.Kind == ReceiverPerson {
			personIDs = append(personIDs, r.PersonID)
		}
	}
	emails := map[string]string{}
	if len(personIDs) > 0 {
		people, err := s.store.People(ctx, vt.Tenant, personIDs)
		if err != nil {
			return nil, err
		}
		for _, p := range people {
			emails[p.ID] = p.Email
		}
	}
	status := MessageQueued
	if vt.Tenant.Mode == ModeTest {
		status = MessageHeld
	}
	var out []Message
	for _, r := range to {
		m := Message{ID: ids.New(ids.Message), Tenant: vt.Tenant, VisitID: vt.ID, Channel: ChannelConsole,
			Subject: subject, Body: body, Status: status, CreatedAt: now}
		switch r.Kind {
		case ReceiverPerson:
			m.To = r.PersonID
			if e := emails[r.PersonID]; e != "" {
				m.Channel, m.To = ChannelEmail, e
			}
		case ReceiverTeam:
			m.To = r.TeamID
		default:
			m.To = Reception
		}
		out = append(out, m)
	}
	return out, nil
}

// HandOverInput names who receives a visit nobody has taken.
type HandOverInput struct {
	To       Optional[string]
	PersonID Optional[string]
	TeamID   Optional[string]
}

// handable are the statuses a visit can be handed over in: it has not
// ended.
var handable = []VisitStatus{VisitExpected, VisitAwaitingApproval, VisitCheckedIn}

// HandOver passes a visit nobody has taken to reception, a person or a
// team. The visit joins the receiver's waiting list and the receiver is
// told; its status does not change.
func (s *Service) HandOver(ctx context.Context, a Actor, id string, in HandOverInput) (Visit, error) {
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return Visit{}, err
	}
	to, team, err := s.handOverTo(ctx, a.Tenant, in, cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	site, err := s.store.Site(ctx, a.Tenant, cur.SiteID)
	if err != nil {
		return Visit{}, err
	}
	return s.apply(ctx, a, id, func(vt *Visit, w *VisitWrites) error {
		now := s.Now()
		return s.handOver(ctx, vt, w, to, team, site, now, now)
	})
}

// handOverTo checks whom a visit at the site siteID is handed over to:
// the receiver, and the team's name when it is a team. It returns a
// *ValidationError listing every problem, or the store's error. The API's
// hand-over and the desk's (a hand_over fact) both ask it.
func (s *Service) handOverTo(ctx context.Context, t Tenant, in HandOverInput, siteID string) (Receiver, *Ref, error) {
	var v ValidationError
	var to Receiver
	var team *Ref
	switch kind := in.To.Value; {
	case !in.To.Set:
		v.Add("to", "is required: reception, person or team")
	case kind == ReceiverReception:
		to.Kind = kind
	case kind == ReceiverPerson:
		to.Kind = kind
		if !in.PersonID.Set {
			v.Add("person_id", "is required with to: person")
		}
	case kind == ReceiverTeam:
		to.Kind = kind
		if !in.TeamID.Set {
			v.Add("team_id", "is required with to: team")
		}
	default:
		v.Add("to", "must be one of reception, person, team")
	}
	if in.PersonID.Set && to.Kind != ReceiverPerson && to.Kind != "" {
		v.Add("person_id", "goes only with to: person")
	}
	if in.TeamID.Set && to.Kind != ReceiverTeam && to.Kind != "" {
		v.Add("team_id", "goes only with to: team")
	}
	if to.Kind == ReceiverPerson && in.PersonID.Set && checkID(&v, "person_id", ids.Person, in.PersonID.Value) {
		p, err := s.store.Person(ctx, t, in.PersonID.Value)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("person_id", "no person with this ID")
		case err != nil:
			return Receiver{}, nil, err
		case !p.Active:
			v.Add("person_id", "%s is deactivated and cannot receive visits", p.Name)
		default:
			to.PersonID = p.ID
		}
	}
	if to.Kind == ReceiverTeam && in.TeamID.Set && checkID(&v, "team_id", ids.Team, in.TeamID.Value) {
		tm, err := s.store.Team(ctx, t, in.TeamID.Value)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("team_id", "no team with this ID")
		case err != nil:
			return Receiver{}, nil, err
		case tm.Archived:
			v.Add("team_id", "the team is archived")
		case tm.SiteID != "" && tm.SiteID != siteID:
			v.Add("team_id", "the team is at another site")
		default:
			to.TeamID, team = tm.ID, &Ref{ID: tm.ID, Name: tm.Name}
		}
	}
	return to, team, v.Err()
}

// stateTaken is the state a visit with a host is in for hand-over: the
// API's rule that such a visit cannot be handed over.
const stateTaken = "taken by a host"

// handOver passes vt, at the site, to the receiver to (team: the team's
// name) at time at, inside the transaction that stores it, and puts the
// notice telling the receiver into w (made now). A visit with a host, or
// one that has ended, is a *StateError and is left as it was: State is
// stateTaken for the first.
func (s *Service) handOver(ctx context.Context, vt *Visit, w *VisitWrites, to Receiver, team *Ref, site Site, at, now time.Time) error {
	if len(vt.Hosts) > 0 || vt.HostID != "" {
		return &StateError{Object: "visit", State: stateTaken, Action: "hand over"}
	}
	if !slices.Contains(handable, vt.Status) {
		return &StateError{Object: "visit", State: string(vt.Status), Action: "hand over"}
	}
	vt.Receiver = to
	if vt.Audience == AudienceDesk {
		vt.Team = team // the team receiving a visit for no one in particular
	}
	body := fmt.Sprintf("%s at %s has been passed to you: nobody has taken the visit yet.", visitorName(vt.Visitor), site.Name)
	if vt.Status == VisitCheckedIn {
		body = fmt.Sprintf("%s is waiting at %s and has been passed to you.", visitorName(vt.Visitor), site.Name)
		vt.WaitingSince = &at // waiting for the new receiver from then
	}
	notices, err := s.notices(ctx, *vt, []Receiver{to}, "A visitor has been passed to you", body, now)
	if err != nil {
		return err
	}
	w.Messages = append(w.Messages, notices...)
	return nil
}

// ReEnter lets a visitor who checked out come in again on the same pass,
// as a new checked-in visit whose pass names the visit holding it. The
// pass rules decide as at check-in (a single-use pass is used; a pass
// past expected_until has expired). Each visit can be re-entered from
// once: the next entry is made from the newest visit.
func (s *Service) ReEnter(ctx context.Context, a Actor, id string, in CheckInInput) (Visit, error) {
	loc, gate, err := s.entry(ctx, a, id, in.GateID)
	if err != nil {
		return Visit{}, err
	}
	var next Visit
	_, err = s.store.UpdateVisit(ctx, a.Tenant, id, func(vt *Visit, w *VisitWrites) error {
		switch {
		case vt.Status != VisitCheckedOut:
			return &StateError{Object: "visit", State: string(vt.Status), Action: "re-enter on"}
		case vt.ReenteredAs != "":
			return &StateError{Object: "visit", State: "re-entered already (as " + vt.ReenteredAs + ")", Action: "re-enter on"}
		}
		now := s.Now()
		// The pass works as it would on a visit still expected: the visit's
		// own check-out does not end it.
		probe := *vt
		probe.Status = VisitExpected
		reason := decide(&probe, gate, loc, now)
		switch {
		case reason == passrule.Ended:
			return &PassRuleError{Reason: string(reason), Status: vt.Status, Detail: "The pass no longer works."}
		case reason != passrule.Admit && !in.Override:
			return &PassRuleError{Reason: string(reason), Status: vt.Status, Detail: refusalDetail(reason)}
		}
		next = Visit{
			ID: ids.New(ids.Visit), Tenant: vt.Tenant, Status: VisitCheckedIn, Type: vt.Type, Source: vt.Source,
			SiteID: vt.SiteID, HostID: vt.HostID, Audience: vt.Audience, Hosts: currentHosts(vt.Hosts), Team: vt.Team,
			NeedsSomeone: len(vt.Hosts) == 0, VisitorID: vt.VisitorID, Visitor: vt.Visitor, Purpose: vt.Purpose,
			VehiclePlate: vt.VehiclePlate, ExpectedAt: vt.ExpectedAt, ExpectedUntil: vt.ExpectedUntil, CheckedInAt: &now, WaitingSince: &now,
			BookingID: vt.BookingID, CustomFields: vt.CustomFields, Receiver: vt.Receiver, CreatedAt: now, UpdatedAt: now,
		}
		if next.Hosts == nil {
			next.Hosts = []Host{}
		}
		holder := vt.Pass.ForVisitID
		if holder == "" {
			holder = vt.ID
		}
		next.Pass = vt.Pass
		next.Pass.Channels = slices.Clone(vt.Pass.Channels)
		next.Pass.Rules.GateIDs = slices.Clone(vt.Pass.Rules.GateIDs)
		next.Pass.ForVisitID = holder
		next.Pass.Uses = vt.Pass.Uses + 1
		if gate != nil {
			next.GateID = gate.ID
		}
		if reason != passrule.Admit {
			w.Audit = append(w.Audit, overrideEvent(ctx, a, next.ID, holder, reason, gate, now))
		}
		w.Visits = append(w.Visits, next)
		vt.ReenteredAs = next.ID
		vt.UpdatedAt = now
		return s.respondVisit(ctx, a, next)
	})
	if err != nil {
		return Visit{}, err
	}
	return s.Visit(ctx, a, next.ID)
}

// entry reads what an entry to visit id is judged with: the site's zone
// and the gate (nil at the desk), checked as the actor may see them.
func (s *Service) entry(ctx context.Context, a Actor, id, gateID string) (*time.Location, *Gate, error) {
	cur, err := s.Visit(ctx, a, id)
	if err != nil {
		return nil, nil, err
	}
	var v ValidationError
	_, loc, err := s.siteZone(ctx, &v, a.Tenant, "site_id", cur.SiteID)
	if err != nil {
		return nil, nil, err
	}
	gate, err := s.entryGate(ctx, &v, a.Tenant, gateID, cur.SiteID)
	if err != nil {
		return nil, nil, err
	}
	return loc, gate, v.Err()
}

// entryGate checks a gate a visitor comes in through at site; an empty id
// is the desk (nil gate).
func (s *Service) entryGate(ctx context.Context, v *ValidationError, t Tenant, id, siteID string) (*Gate, error) {
	if id == "" || !checkID(v, "gate_id", ids.Gate, id) {
		return nil, nil
	}
	g, err := s.store.Gate(ctx, t, id)
	switch {
	case errors.Is(err, ErrNotFound):
		v.Add("gate_id", "no gate with this ID")
	case err != nil:
		return nil, err
	case g.SiteID != siteID:
		v.Add("gate_id", "the gate is at another site than the visit")
	case g.Direction == DirectionExit:
		v.Add("gate_id", "the gate is an exit")
	default:
		return &g, nil
	}
	return nil, nil
}

// EraseVisitor erases a visitor: the visitor record is deleted, and the
// personal data its visits and bookings hold (purpose, vehicle plate,
// custom-field answers) is removed from them. Later reads of the visitor
// are not found; the visits stay, for the site's records, without anyone's
// details.
func (s *Service) EraseVisitor(ctx context.Context, a Actor, id string) error {
	now := s.Now()
	ctx, l := withEvents(ctx)
	l.audit = append(l.audit, AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: a.Tenant, Action: AuditVisitorErased,
		ActorKind: ActorKey, ActorID: a.KeyID, ObjectType: "visitor", ObjectID: id, RequestID: RequestID(ctx), CreatedAt: now})
	return s.committed(l, s.store.EraseVisitor(ctx, a.Tenant, id, func(v *Visit) {
		v.Visitor = Visitor{}
		v.Purpose, v.VehiclePlate = "", ""
		v.CustomFields = map[string]json.RawMessage{}
		if v.RescheduledTo != nil {
			v.RescheduledTo.Note = ""
		}
		v.UpdatedAt = now
	}, func(b *Booking) {
		b.Visitor = Visitor{}
		b.Purpose = ""
		b.CustomFields = map[string]json.RawMessage{}
		b.UpdatedAt = now
	}))
}

// Visitor returns a visitor record; an erased visitor is not found.
func (s *Service) Visitor(ctx context.Context, a Actor, id string) (Visitor, error) {
	v, err := s.store.Visitor(ctx, a.Tenant, id)
	if err != nil {
		return Visitor{}, err
	}
	if err := s.checkHistory(a, v.CreatedAt); err != nil {
		return Visitor{}, err
	}
	return v, nil
}
