package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svc-vms/svc/sync/protocol"
)

// This file applies the reception desk's facts (protocol.DeskKind): a
// walk-in, a check-in or check-out at the desk, a take and a hand-over,
// with the API's own code (planVisit, newVisit, visitorFor, handOverTo,
// handOver, notices) and the gates' (checkIn, checkOut). The rules are in
// docs/decisions.md, "Kiosk data and facts".

// deskBatch is what the desk facts of one ApplyFacts call share: the
// organisation acting as the API's secret key would (its plan's limits)
// and the site, read once.
type deskBatch struct {
	s     *Service
	ctx   context.Context
	actor Actor
	site  Site
}

// deskPrep is what one desk fact needs from outside its transaction, read
// before the batch's transaction begins (as a punch's attendance event
// is): the reads are of people, teams, types and visitors, which the
// fact does not change, and a fact applied before only wastes them.
type deskPrep struct {
	visit    *Visit       // a walk-in's visit as it is to be made
	writes   VisitWrites  // and its new visitor record, its pass and the notices telling its receivers
	problems []FieldError // why the walk-in, or the hand-over's receiver, does not validate now
	person   *Person      // a take's person; nil when the organisation has none with the ID
	to       Receiver     // a hand-over's receiver
	team     *Ref         // and its team
}

func (s *Service) newDeskBatch(ctx context.Context, t Tenant, siteID string) (*deskBatch, error) {
	org, err := s.store.Organisation(ctx, t.OrgID)
	if err != nil {
		return nil, fmt.Errorf("desk facts: organisation: %w", err)
	}
	site, err := s.store.Site(ctx, t, siteID)
	if err != nil {
		return nil, fmt.Errorf("desk facts: site: %w", err)
	}
	return &deskBatch{s: s, ctx: ctx, actor: Actor{Tenant: t, Plan: org.Plan}, site: site}, nil
}

// prepare reads what the desk fact f needs. made holds the visits walk-ins
// earlier in the batch make; a fact about a visit neither made there nor
// stored is too early (ErrFactEarly, wrapped with ErrEdgeRejected), since
// a visit is never deleted: its walk_in is still on its way.
func (d *deskBatch) prepare(f protocol.Fact, made map[string]bool, now time.Time) (deskPrep, error) {
	ctx, t := d.ctx, d.actor.Tenant
	if f.Kind == protocol.FactWalkIn {
		made[f.VisitID] = true
		return d.prepareWalkIn(f, now)
	}
	if !made[f.VisitID] {
		_, err := d.s.store.Visit(ctx, t, f.VisitID)
		if errors.Is(err, ErrNotFound) {
			return deskPrep{}, fmt.Errorf("%w: %w: visit %s", ErrEdgeRejected, ErrFactEarly, f.VisitID)
		}
		if err != nil {
			return deskPrep{}, err
		}
	}
	var p deskPrep
	switch f.Kind {
	case protocol.FactTake:
		person, err := d.s.store.Person(ctx, t, f.PersonID)
		switch {
		case err == nil:
			p.person = &person
		case !errors.Is(err, ErrNotFound):
			return deskPrep{}, err
		}
	case protocol.FactHandOver:
		in := HandOverInput{To: Some(f.To)}
		if f.PersonID != "" {
			in.PersonID = Some(f.PersonID)
		}
		if f.TeamID != "" {
			in.TeamID = Some(f.TeamID)
		}
		var err error
		p.to, p.team, err = d.s.handOverTo(ctx, t, in, d.site.ID)
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			p.problems = ve.Fields
		case err != nil:
			return deskPrep{}, err
		}
	}
	return p, nil
}

// prepareWalkIn makes a walk-in's visit as POST /visits with walk_in true
// would (planVisit, visitorFor, newVisit), checked in at the desk's time
// and made now, with its pass sent and its receivers told that the
// visitor has arrived. A returning visitor's record, when the
// organisation has it, is the visitor; otherwise the details typed at the
// desk are, matched to a record as the API matches them. What no longer
// validates is kept as the desk made it (asMade) and listed in problems.
func (d *deskBatch) prepareWalkIn(f protocol.Fact, now time.Time) (deskPrep, error) {
	ctx, s, a, wi := d.ctx, d.s, d.actor, f.WalkIn
	vin := &VisitorInput{Name: Some(wi.Visitor.Name), Email: Some(wi.Visitor.Email), Phone: Some(wi.Visitor.Phone),
		Company: Some(wi.Visitor.Company)}
	var returning *Visitor
	if wi.VisitorID != "" {
		vr, err := s.store.Visitor(ctx, a.Tenant, wi.VisitorID)
		switch {
		case err == nil:
			returning = &vr
			vin = &VisitorInput{Name: Some(vr.Name), Email: Some(vr.Email), Phone: Some(vr.Phone), Company: Some(vr.Company)}
		case !errors.Is(err, ErrNotFound):
			return deskPrep{}, err
		}
	}
	in := VisitInput{SiteID: Some(d.site.ID), Type: Some(wi.Type), Visitor: Some(vin), WalkIn: Some(true)}
	if wi.HostID != "" {
		in.HostID = Some(wi.HostID)
	}
	if wi.TeamID != "" {
		in.TeamID = Some(wi.TeamID)
	}
	if wi.CustomFields != nil {
		in.CustomFields = Some(wi.CustomFields)
	}
	// One receiver and no pass rules: planVisit's only other refusal, a
	// PlanError, cannot happen, and a store error is the batch's.
	p, err := s.planVisit(ctx, a, in)
	var ve *ValidationError
	var problems []FieldError
	switch {
	case errors.As(err, &ve):
		problems = ve.Fields
		if err := d.asMade(p, wi); err != nil {
			return deskPrep{}, err
		}
		// What the pass would go to may be what failed: the visitor
		// has the desk's badge, and the API can send the pass again.
		in.SendPass = Some(false)
	case err != nil:
		return deskPrep{}, err
	}
	var w VisitWrites
	var vis Visitor
	if returning != nil {
		vis = *returning
	} else if vis, err = s.visitorFor(ctx, a, vin, now, &w.Visitor); err != nil {
		return deskPrep{}, err
	}
	v := s.newVisit(a, in, p, f.VisitID, vis, f.At, now, &w)
	told, err := s.tellArrival(ctx, &v, d.site, f.At, now)
	if err != nil {
		return deskPrep{}, err
	}
	w.Messages = append(w.Messages, told...)
	return deskPrep{visit: &v, writes: w, problems: problems}, nil
}

// asMade fills in what planVisit left out of p because it no longer
// validates, with what the organisation has of it, so the visit is
// recorded as the desk made it: the type's pass rules (a type turned off:
// its key is kept whether the organisation has it or not), the host or
// team named (deactivated, archived, at another site; one the
// organisation does not have leaves the visit for the desk) and the
// answers as given.
func (d *deskBatch) asMade(p *visitPlan, wi *protocol.WalkIn) error {
	ctx, s, t := d.ctx, d.s, d.actor.Tenant
	if p.vt == nil {
		vt, err := s.store.VisitType(ctx, t, wi.Type)
		switch {
		case err == nil:
			p.vt, p.rules = &vt, typeRules(d.actor, &vt)
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if wi.HostID != "" && len(p.hosts) == 0 {
		person, err := s.store.Person(ctx, t, wi.HostID)
		switch {
		case err == nil:
			p.hosts = []Host{{ID: person.ID, Name: person.Name, Role: HostRoleLead, State: HostStateInvited}}
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if wi.TeamID != "" && p.team == nil {
		tm, err := s.store.Team(ctx, t, wi.TeamID)
		switch {
		case err == nil:
			p.team = &Ref{ID: tm.ID, Name: tm.Name}
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	switch {
	case len(p.hosts) > 0:
		p.audience = AudiencePerson
	case p.team != nil:
		p.audience = AudienceTeam
	default:
		p.audience = AudienceDesk
	}
	if p.fields == nil {
		p.fields = wi.CustomFields
	}
	return nil
}

// tellArrival tells whoever visit v is for that its visitor has arrived at
// the site's desk, with the notices a hand-over sends (tellReceivers): each
// host, marked notified at at, else the person or team receiving it. A
// visit for reception alone tells no one: the visitor is at reception.
func (s *Service) tellArrival(ctx context.Context, v *Visit, site Site, at, now time.Time) ([]Message, error) {
	if len(v.Hosts) == 0 && (v.Receiver.Kind == "" || v.Receiver.Kind == ReceiverReception) {
		return nil, nil
	}
	told, err := s.tellReceivers(ctx, *v, "Your visitor has arrived",
		fmt.Sprintf("%s has arrived at %s and is waiting at reception.", visitorName(v.Visitor), site.Name), now)
	if err != nil {
		return nil, err
	}
	for i := range v.Hosts {
		v.Hosts[i].State, v.Hosts[i].AskedAt = HostStateNotified, &at
	}
	return told, nil
}

// walkIn makes the walk-in's visit prepared before the transaction, unless
// its ID is taken (visit_exists, nothing made).
func (j *factJudge) walkIn() (string, VisitStatus, error) {
	taken, err := j.load(j.f.VisitID)
	switch {
	case err == nil:
		if taken.SiteID == j.siteID {
			j.touch(&taken)
		}
		return ConflictVisitExists, taken.Status, nil
	case !errors.Is(err, ErrNotFound):
		return "", "", err
	}
	j.w.New = append(j.w.New, *j.prep.visit)
	if vr := j.prep.writes.Visitor; vr != nil {
		j.w.Visitors = append(j.w.Visitors, *vr)
	}
	j.w.Messages = append(j.w.Messages, j.prep.writes.Messages...)
	if len(j.prep.problems) > 0 {
		j.problems()
		return ConflictWalkInUnvalidated, "", nil
	}
	return "", "", nil
}

// problems puts the prepared problems into the fact's audit event.
func (j *factJudge) problems() {
	list := make([]map[string]string, len(j.prep.problems))
	for i, p := range j.prep.problems {
		list[i] = map[string]string{"field": p.Field, "message": p.Message}
	}
	j.detail = map[string]any{"problems": list}
}

// take makes the person the visit's lead host. The desk's take stands
// whatever the cloud did meanwhile (the person is with the visitor),
// except on a visit the cloud has ended; a take of a visit that got a
// host, or was handed over after the take, is flagged taken_elsewhere,
// and a host before it stays as a co-host.
func (j *factJudge) take() (string, VisitStatus, error) {
	v, err := j.visit(j.f.VisitID)
	if err != nil || v == nil {
		return ConflictUnknownVisit, "", err
	}
	defer j.touch(v)
	status, p := v.Status, j.prep.person
	switch {
	case p == nil:
		return ConflictUnknownPerson, status, nil
	case ended(v.Status):
		return ConflictEnded, status, nil
	case v.HostID == p.ID:
		return "", status, nil // theirs already
	}
	var conflict string
	switch {
	case v.HostID != "" || len(v.Hosts) > 0:
		conflict = ConflictTakenElsewhere
	case v.WaitingSince != nil && v.WaitingSince.After(j.f.At):
		conflict = ConflictTakenElsewhere // handed over in the cloud after the desk took it
	case !p.Active:
		conflict = ConflictPersonInactive
	}
	at := j.f.At
	hosts := []Host{{ID: p.ID, Name: p.Name, Role: HostRoleLead, State: HostStateNotified, AskedAt: &at}}
	for _, h := range v.Hosts {
		if h.ID == p.ID {
			continue
		}
		if h.Role == HostRoleLead {
			h.Role = HostRoleCoHost
		}
		hosts = append(hosts, h)
	}
	v.Hosts, v.HostID, v.NeedsSomeone = hosts, p.ID, false
	return conflict, status, nil
}

// handOver passes the visit to the receiver the fact names with the API's
// rule and notices (Service.handOver), at the desk's time. A receiver the
// API refuses now, a visit with a host, or one that has ended or left is
// not handed over: invalid_receiver, has_host, ended, already_checked_out.
func (j *factJudge) handOver() (string, VisitStatus, error) {
	v, err := j.visit(j.f.VisitID)
	if err != nil || v == nil {
		return ConflictUnknownVisit, "", err
	}
	status := v.Status
	if len(j.prep.problems) > 0 {
		j.problems()
		j.touch(v)
		return ConflictInvalidReceiver, status, nil
	}
	var w VisitWrites
	err = j.desk.s.handOver(j.desk.ctx, v, &w, j.prep.to, j.prep.team, j.desk.site, j.f.At, j.now)
	var se *StateError
	var conflict string
	switch {
	case errors.As(err, &se) && se.State == stateTaken:
		conflict = ConflictHasHost
	case errors.As(err, &se) && ended(v.Status):
		conflict = ConflictEnded
	case errors.As(err, &se):
		conflict = ConflictAlreadyCheckedOut
	case err != nil:
		return "", "", err
	}
	j.w.Messages = append(j.w.Messages, w.Messages...)
	j.touch(v)
	return conflict, status, nil
}
