package cloud

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// This file is the cloud's side of its sites' edges: their credentials,
// the facts they send (docs/decisions.md, "Edge facts in the cloud"), the
// change feed they follow and their status. The MQTT half
// (sync/mqttsync) calls it; it knows nothing of MQTT.

// edgeSecretPrefix starts every edge's broker password.
const edgeSecretPrefix = "svc_edge_"

// DefaultEdgeName is an edge's name when none is given.
const DefaultEdgeName = "Edge"

// CreateEdge makes an edge for a site of the tenant and returns it with
// its broker password, which is shown this once and never stored (only
// its SHA-256). Its broker username is its ID. A site_id that is not one
// of the tenant's sites, or a bad name, returns a *ValidationError; when
// the edge's broker account cannot be made (putBrokerAccount), an error
// wrapping ErrBrokerUnavailable, and nothing is stored.
func (s *Service) CreateEdge(ctx context.Context, t Tenant, siteID, name string) (Edge, string, error) {
	if !t.Mode.Valid() {
		return Edge{}, "", fmt.Errorf("create edge: mode %q is not live or test", t.Mode)
	}
	if name == "" {
		name = DefaultEdgeName
	}
	var v ValidationError
	checkText(&v, "name", name, true, MaxNameLen)
	if err := s.checkSite(ctx, &v, t, "site_id", siteID); err != nil {
		return Edge{}, "", fmt.Errorf("create edge: %w", err)
	}
	if err := v.Err(); err != nil {
		return Edge{}, "", err
	}
	id := ids.New(ids.Edge)
	secret := edgeSecretPrefix + keyBody()
	e := Edge{ID: id, Tenant: t, SiteID: siteID, Name: name, Username: id, SecretHash: HashKey(secret),
		CreatedAt: s.Now(), State: EdgeOffline}
	if err := s.putBrokerAccount(ctx, e, secret); err != nil {
		return Edge{}, "", fmt.Errorf("create edge: %w", err)
	}
	if err := s.store.CreateEdge(ctx, e); err != nil {
		return Edge{}, "", fmt.Errorf("create edge: %w", err)
	}
	return e, secret, nil
}

// RevokeEdge revokes the tenant's edge for good: its broker credentials
// are refused from now on, the embedded broker disconnects it (within
// broker.RecheckEvery), and its facts, statuses and resync requests are
// refused, so a lost or stolen appliance can neither open the site's feed
// nor write to it. Its walk-in badge key, if the cloud certified one, goes
// out retired on its site's feed in the same transaction, so the site's
// gates stop accepting its badges. Its site may then have a new edge.
// Revoking twice keeps the first time. ErrNotFound when the tenant has no
// such edge.
func (s *Service) RevokeEdge(ctx context.Context, t Tenant, id string) (Edge, error) {
	if !ids.Valid(ids.Edge, id) {
		return Edge{}, ErrNotFound
	}
	now := s.Now()
	before, err := s.Edge(ctx, t, id)
	if err != nil {
		return Edge{}, fmt.Errorf("revoke edge: %w", err)
	}
	after := before
	if after.RevokedAt == nil {
		after.RevokedAt = &now
	}
	after = after.Presented(now)
	// The API's answer is the edge as revoked, rendered before the write
	// so that the write stores it with its Idempotency-Key.
	if err := respond(ctx, after); err != nil {
		return Edge{}, fmt.Errorf("revoke edge: %w", err)
	}
	ctx, l := withEvents(ctx)
	if before.RevokedAt == nil && s.render != nil {
		// edge.revoked, in the revocation's transaction; revoking again
		// fires nothing.
		data, err := s.render(after)
		if err != nil {
			return Edge{}, fmt.Errorf("revoke edge: %w", err)
		}
		// An edge announced online goes offline with it: edge.offline
		// after edge.revoked (the store announces it offline).
		types := []string{EventEdgeRevoked}
		if before.Announced == EdgeOnline {
			types = append(types, EventEdgeOffline)
		}
		if err := s.record(ctx, l, types, "edge", id, t, data); err != nil {
			return Edge{}, err
		}
	}
	e, err := s.store.RevokeEdge(ctx, t, id, now)
	if err := s.committed(l, err); err != nil {
		return Edge{}, fmt.Errorf("revoke edge: %w", err)
	}
	s.revokedBrokerAccount()
	return e, nil
}

// RevokedEdges returns those of the edge IDs given that are revoked (for
// the broker, which disconnects them).
func (s *Service) RevokedEdges(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	states, err := s.store.EdgesRevoked(ctx, ids)
	if err != nil {
		return nil, err
	}
	revoked := []string{}
	for _, id := range ids {
		if states[id] {
			revoked = append(revoked, id)
		}
	}
	return revoked, nil
}

// SiteEdge returns nil when edgeID is an edge of the site that may sync
// (not revoked), an error wrapping ErrEdgeRejected when it is not, and the
// store's errors. The cloud half asks before it answers a resync: the
// broker's access rules are not the only check on who reads a site's feed.
func (s *Service) SiteEdge(ctx context.Context, site protocol.Site, edgeID string) error {
	_, err := s.siteEdge(ctx, site, edgeID)
	return err
}

// AuthenticateEdge returns the edge whose broker credentials these are, or
// ErrUnauthorized. The password's hash is compared in constant time.
func (s *Service) AuthenticateEdge(ctx context.Context, username, password string) (Edge, error) {
	if !ids.Valid(ids.Edge, username) || password == "" {
		return Edge{}, ErrUnauthorized
	}
	e, err := s.store.Edge(ctx, username)
	if errors.Is(err, ErrNotFound) {
		return Edge{}, ErrUnauthorized
	}
	if err != nil {
		return Edge{}, fmt.Errorf("authenticate edge: %w", err)
	}
	if subtle.ConstantTimeCompare(HashKey(password), e.SecretHash) != 1 || e.Username != username || e.RevokedAt != nil {
		return Edge{}, ErrUnauthorized
	}
	return e, nil
}

// siteEdge returns the edge, which must be one of the site's, or an error
// wrapping ErrEdgeRejected.
func (s *Service) siteEdge(ctx context.Context, site protocol.Site, edgeID string) (Edge, error) {
	t, siteID := SiteTenant(site)
	e, err := s.store.Edge(ctx, edgeID)
	switch {
	case errors.Is(err, ErrNotFound):
		return Edge{}, fmt.Errorf("%w: no edge %s", ErrEdgeRejected, edgeID)
	case err != nil:
		return Edge{}, err
	case e.Tenant != t || e.SiteID != siteID:
		return Edge{}, fmt.Errorf("%w: edge %s is not one of site %s's", ErrEdgeRejected, edgeID, site.Prefix())
	case e.RevokedAt != nil:
		return Edge{}, fmt.Errorf("%w: edge %s was revoked at %s", ErrEdgeRejected, edgeID, e.RevokedAt.Format(time.RFC3339))
	}
	return e, nil
}

// ApplyFact records a fact from an edge of the site and applies it to the
// cloud's visits, once per fact ID: a fact applied before returns nil and
// changes nothing, so the caller acknowledges both alike. A fact that
// disagrees with the cloud's state is recorded all the same, with its
// conflict, and an audit event by the edge; the cloud's ending of a visit
// stands. Every visit a fact touches goes out on the site's feed again,
// so the edge converges. The rules are in docs/decisions.md ("Edge facts
// in the cloud"; the desk's kinds: "Kiosk data and facts").
//
// A fact that is not well formed, or whose edge is not one of the site's,
// returns an error wrapping ErrEdgeRejected and is not recorded; so does
// a desk fact about a visit whose walk_in has not arrived (ErrFactEarly).
// Other errors are the store's, and the fact may be applied again later.
func (s *Service) ApplyFact(ctx context.Context, site protocol.Site, f protocol.Fact) error {
	errs, err := s.ApplyFacts(ctx, site, []protocol.Fact{f})
	if err != nil {
		return err
	}
	return errs[0]
}

// ApplyFacts applies facts that arrived from edges of the site, in order,
// each as ApplyFact does, in one store transaction: the edges and gates
// are read once for the batch, and each visit the facts touch is stored
// and goes out on the feed once, as the batch's last fact about it left
// it. errs[i] is facts[i]'s outcome: nil when it is applied now or was
// before (a second fact with an ID earlier in facts included), or an
// error wrapping ErrEdgeRejected (not recorded; the others are applied
// all the same). err is the store's: then nothing of the batch is
// recorded, errs is nil, and every fact may be applied again later.
func (s *Service) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) (errs []error, err error) {
	errs = make([]error, len(facts))
	if !site.Valid() {
		for i := range facts {
			errs[i] = fmt.Errorf("%w: %q is not a site's topic prefix", ErrEdgeRejected, site.Prefix())
		}
		return errs, nil
	}
	t, siteID := SiteTenant(site)
	edges := map[string]error{} // by edge ID: nil for one of the site's, else the rejection
	gates := map[string]bool{}  // by gate ID: one of the site's
	now := s.Now()
	batch := make([]EdgeFact, 0, len(facts))
	judges := make([]factJudge, 0, len(facts))
	var desk *deskBatch       // read at the batch's first desk fact
	made := map[string]bool{} // the visits the batch's walk-ins make
	for i, f := range facts {
		if _, err := protocol.Encode(&f); err != nil {
			errs[i] = fmt.Errorf("apply fact %s: %w: %w", f.ID, ErrEdgeRejected, err)
			continue
		}
		rejected, ok := edges[f.EdgeID]
		if !ok {
			_, err := s.siteEdge(ctx, site, f.EdgeID)
			switch {
			case errors.Is(err, ErrEdgeRejected):
				rejected = err
			case err != nil:
				return nil, fmt.Errorf("apply facts: %w", err)
			}
			edges[f.EdgeID] = rejected
		}
		if rejected != nil {
			errs[i] = fmt.Errorf("apply fact %s: %w", f.ID, rejected)
			continue
		}
		gateOK, ok := gates[f.GateID]
		if !ok && !protocol.DeskKind(f.Kind) {
			g, err := s.store.Gate(ctx, t, f.GateID)
			switch {
			case err == nil:
				gateOK = g.SiteID == siteID
			case !errors.Is(err, ErrNotFound):
				return nil, fmt.Errorf("apply facts: %w", err)
			}
			gates[f.GateID] = gateOK
		}
		f.At = f.At.UTC().Truncate(time.Microsecond)
		var punchConflict string
		if f.Kind == protocol.FactPunch {
			// The punch goes in first, in its own transaction, keyed by
			// the fact's ID: if the fact's record below fails, the edge
			// sends it again and the punch is found, not made twice.
			if punchConflict, err = s.punchFromFact(ctx, t, siteID, f, gateOK, now); err != nil {
				return nil, fmt.Errorf("apply fact %s: %w", f.ID, err)
			}
		}
		var prep deskPrep
		if protocol.DeskKind(f.Kind) {
			if desk == nil {
				if desk, err = s.newDeskBatch(ctx, t, siteID); err != nil {
					return nil, fmt.Errorf("apply facts: %w", err)
				}
			}
			prep, err = desk.prepare(f, made, now)
			switch {
			case errors.Is(err, ErrEdgeRejected):
				errs[i] = fmt.Errorf("apply fact %s: %w", f.ID, err)
				continue
			case err != nil:
				return nil, fmt.Errorf("apply fact %s: %w", f.ID, err)
			}
		}
		batch = append(batch, EdgeFact{Tenant: t, SiteID: siteID, Fact: f, ReceivedAt: now})
		judges = append(judges, factJudge{t: t, siteID: siteID, f: f, gateOK: gateOK, now: now, punchConflict: punchConflict,
			desk: desk, prep: prep})
	}
	if len(batch) == 0 {
		return errs, nil
	}
	_, err = s.store.ApplyFacts(ctx, batch, func(i int, load func(string) (Visit, error), w *FactWrites) error {
		j := judges[i]
		j.load, j.w = load, w
		return j.judge()
	})
	if err != nil {
		if len(batch) == 1 {
			return nil, fmt.Errorf("apply fact %s: %w", batch[0].Fact.ID, err)
		}
		return nil, fmt.Errorf("apply %d facts: %w", len(batch), err)
	}
	return errs, nil
}

// factJudge decides what one fact does, inside the transaction that
// records it.
type factJudge struct {
	t      Tenant
	siteID string
	f      protocol.Fact
	gateOK bool // the fact's gate is one of the site's
	now    time.Time
	// punchConflict is why a punch fact could not be applied as it
	// stands (ConflictUnknownPerson, ConflictPersonInactive); "" when it
	// was.
	punchConflict string
	desk          *deskBatch     // a desk fact's batch; nil for a gate's
	prep          deskPrep       // what a desk fact read before the transaction
	detail        map[string]any // more for the fact's audit event
	load          func(string) (Visit, error)
	w             *FactWrites
}

// maxReentries bounds the walk along a pass's re-entries.
const maxReentries = 1000

func (j *factJudge) judge() error {
	var conflict string
	var status VisitStatus // the cloud's, before the fact
	var err error
	switch j.f.Kind {
	case protocol.FactRefused:
		if j.f.Voids != "" {
			return j.void()
		}
		return nil // recorded, nothing more: a refusal changes no visit
	case protocol.FactPassage:
		return nil // an opening for a punch already made: recorded, no new punch
	case protocol.FactPunch:
		// Applied before the batch (punchFromFact); recorded here, with
		// what went wrong, audited against the person.
		conflict := j.punchConflict
		if conflict == "" && !j.gateOK {
			conflict = ConflictUnknownGate
		}
		if conflict != "" {
			j.w.Conflict = conflict
			ev := j.event(conflict, "")
			ev.ObjectType, ev.ObjectID = "person", j.f.PersonID
			j.w.Audit = append(j.w.Audit, ev)
		}
		return nil
	case protocol.FactCheckIn, protocol.FactCheckOut, protocol.FactDeskCheckIn, protocol.FactDeskCheckOut:
		conflict, status, err = j.entryOrExit()
	case protocol.FactReEntry:
		conflict, status, err = j.reEntry()
	case protocol.FactEntered:
		conflict, status, err = j.entered()
	case protocol.FactWalkIn:
		conflict, status, err = j.walkIn()
	case protocol.FactTake:
		conflict, status, err = j.take()
	case protocol.FactHandOver:
		conflict, status, err = j.handOver()
	}
	if err != nil {
		return err
	}
	if conflict == "" && !j.gateOK && j.desk == nil {
		conflict = ConflictUnknownGate
	}
	if conflict != "" {
		j.w.Conflict = conflict
		j.w.Audit = append(j.w.Audit, j.event(conflict, status))
	}
	return nil
}

// visit loads a visit of the fact's site; nil when the site has none
// with this ID.
func (j *factJudge) visit(id string) (*Visit, error) {
	v, err := j.load(id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v.SiteID != j.siteID {
		return nil, nil
	}
	return &v, nil
}

// touch stores v again, conflicting or not, so it goes out on the feed.
func (j *factJudge) touch(v *Visit) {
	v.UpdatedAt = j.now
	if i := slices.IndexFunc(j.w.Visits, func(x Visit) bool { return x.ID == v.ID }); i >= 0 {
		j.w.Visits[i] = *v
		return
	}
	j.w.Visits = append(j.w.Visits, *v)
}

func (j *factJudge) setGate(v *Visit) {
	if j.gateOK {
		v.GateID = j.f.GateID
	}
}

// ended reports whether the cloud has closed the visit for good: an
// ending the gate cannot undo.
func ended(st VisitStatus) bool {
	return st == VisitCancelled || st == VisitDenied || st == VisitNoShow
}

func (j *factJudge) entryOrExit() (string, VisitStatus, error) {
	v, err := j.visit(j.f.VisitID)
	if err != nil || v == nil {
		return ConflictUnknownVisit, "", err
	}
	status := v.Status
	var conflict string
	switch j.f.Kind {
	case protocol.FactCheckIn, protocol.FactDeskCheckIn:
		conflict = j.checkIn(v)
	default:
		conflict = j.checkOut(v)
	}
	if j.f.Kind == protocol.FactDeskCheckIn && status == VisitExpected && v.Status == VisitCheckedIn {
		// Host told: the visitor came to the desk, not through a gate.
		told, err := j.desk.s.tellArrival(j.desk.ctx, v, j.desk.site, j.f.At, j.now)
		if err != nil {
			return "", "", err
		}
		j.w.Messages = append(j.w.Messages, told...)
	}
	j.touch(v)
	return conflict, status, nil
}

// checkIn applies an admission at the gate's scan time.
func (j *factJudge) checkIn(v *Visit) string {
	at := j.f.At
	switch {
	case ended(v.Status) || v.Pass.Revoked:
		return ConflictEnded
	case v.Status == VisitAwaitingApproval:
		return ConflictAwaitingApproval
	case v.Status == VisitExpected:
		v.Status, v.CheckedInAt, v.NeedsSomeone, v.WaitingSince = VisitCheckedIn, &at, len(v.Hosts) == 0, &at
		v.Pass.Uses++
		j.setGate(v)
		return ""
	}
	// Checked in or out already: the pass admitted once more, and the
	// first admission is the earliest.
	v.Pass.Uses++
	first := v.CheckedInAt == nil
	if first || at.Before(*v.CheckedInAt) {
		v.CheckedInAt = &at
		j.setGate(v)
	}
	switch {
	case v.Status == VisitCheckedIn:
		return ConflictAlreadyCheckedIn
	case first && (v.CheckedOutAt == nil || !at.After(*v.CheckedOutAt)):
		return "" // the check-out arrived first: both in order now
	}
	return ConflictAlreadyCheckedOut
}

// checkOut applies an exit at the gate's scan time.
func (j *factJudge) checkOut(v *Visit) string {
	at := j.f.At
	switch {
	case ended(v.Status):
		return ConflictEnded
	case v.Status == VisitAwaitingApproval:
		return ConflictAwaitingApproval
	case v.Status == VisitCheckedIn:
		v.Status, v.CheckedOutAt, v.NeedsSomeone = VisitCheckedOut, &at, false
		return ""
	case v.Status == VisitExpected:
		// The visitor left: whether the check-in is still on its way or
		// never happened, the visit is over.
		v.Status, v.CheckedOutAt, v.NeedsSomeone = VisitCheckedOut, &at, false
		return ConflictNotCheckedIn
	}
	if v.CheckedOutAt == nil || at.After(*v.CheckedOutAt) {
		v.CheckedOutAt = &at // the last exit
	}
	return ConflictAlreadyCheckedOut
}

// entered applies a visitor checked in at no gate passing an entry gate:
// the visit's gate_id becomes the gate when it has none (an unknown gate
// sets nothing, and judge flags it), and nothing else changes: it is the
// check-in the visit had, not a new one (no use counted, no
// visit.checked_in; the API's rendering of the visit changes, so the
// event store fires visit.updated). A visit the cloud has checked out
// keeps its state: the gate is set when the passage came before the
// check-out (the two arrived out of order), and flagged
// already_checked_out when after it. One the cloud has as expected (its
// check-in never arrived, or was undone) is checked in at the gate, as a
// check_in fact would, flagged not_checked_in: the visitor is on site. A
// visit that already has a gate keeps the first, flagged
// already_checked_in; ended and awaiting_approval as for a check-in.
func (j *factJudge) entered() (string, VisitStatus, error) {
	v, err := j.visit(j.f.VisitID)
	if err != nil || v == nil {
		return ConflictUnknownVisit, "", err
	}
	status := v.Status
	at := j.f.At
	var conflict string
	switch {
	case ended(v.Status) || v.Pass.Revoked:
		conflict = ConflictEnded
	case v.Status == VisitAwaitingApproval:
		conflict = ConflictAwaitingApproval
	case v.Status == VisitExpected:
		if conflict = j.checkIn(v); conflict == "" {
			conflict = ConflictNotCheckedIn
		}
	case v.Status == VisitCheckedOut && v.CheckedOutAt != nil && at.After(*v.CheckedOutAt):
		conflict = ConflictAlreadyCheckedOut
	case v.GateID != "":
		conflict = ConflictAlreadyCheckedIn
	default: // checked in, or checked out after the passage
		j.setGate(v)
	}
	j.touch(v)
	return conflict, status, nil
}

// reEntry makes the new visit of a re-entry, as Service.ReEnter does,
// from the newest visit of the pass: the pass visit's chain of re-entries
// followed to its end.
func (j *factJudge) reEntry() (string, VisitStatus, error) {
	newID := j.f.VisitID
	taken, err := j.load(newID)
	switch {
	case err == nil:
		if taken.SiteID == j.siteID {
			j.touch(&taken)
		}
		return ConflictVisitExists, taken.Status, nil
	case !errors.Is(err, ErrNotFound):
		return "", "", err
	}
	p, err := j.visit(j.f.PassVisitID)
	if err != nil || p == nil {
		return ConflictUnknownVisit, "", err
	}
	from := p
	seen := map[string]bool{p.ID: true}
	for from.ReenteredAs != "" && len(seen) < maxReentries {
		next, err := j.visit(from.ReenteredAs)
		if err != nil {
			return "", "", err
		}
		if next == nil || seen[next.ID] {
			break
		}
		seen[next.ID] = true
		from = next
	}
	status := from.Status
	var conflict string
	switch {
	case ended(from.Status) || from.Pass.Revoked:
		conflict = ConflictEnded
	case from.Status != VisitCheckedOut || from.ReenteredAs != "":
		conflict = ConflictNotCheckedOut
	}
	// The visitor is on site: the new visit is made whatever the
	// conflict, and the pass's visits keep their state.
	holder := from.Pass.ForVisitID
	if holder == "" {
		holder = from.ID
	}
	at := j.f.At
	next := Visit{
		ID: newID, Tenant: j.t, Status: VisitCheckedIn, Type: from.Type, Source: from.Source,
		SiteID: from.SiteID, HostID: from.HostID, Audience: from.Audience, Hosts: currentHosts(from.Hosts), Team: from.Team,
		NeedsSomeone: len(from.Hosts) == 0, VisitorID: from.VisitorID, Visitor: from.Visitor, Purpose: from.Purpose,
		VehiclePlate: from.VehiclePlate, ExpectedAt: from.ExpectedAt, ExpectedUntil: from.ExpectedUntil, CheckedInAt: &at, WaitingSince: &at,
		BookingID: from.BookingID, CustomFields: from.CustomFields, Receiver: from.Receiver, CreatedAt: j.now, UpdatedAt: j.now,
	}
	if next.Hosts == nil {
		next.Hosts = []Host{}
	}
	next.Pass = from.Pass
	next.Pass.Channels = slices.Clone(from.Pass.Channels)
	next.Pass.Rules.GateIDs = slices.Clone(from.Pass.Rules.GateIDs)
	next.Pass.ForVisitID = holder
	next.Pass.Uses = from.Pass.Uses + 1
	j.setGate(&next)
	if from.ReenteredAs == "" {
		from.ReenteredAs = newID
	}
	j.touch(p)
	j.touch(from)
	j.w.New = append(j.w.New, next)
	return conflict, status, nil
}

// void undoes the admit a relay_failed refusal names: the gate recorded
// the admit, then its relay did not free the passage, so the visitor is
// still outside (or, for a check-out, inside). The refusal carries the
// admit's visit and scan time; the visit is put back only while it still
// shows that admit, since what the cloud did after it wins. Every void is
// audited; one the visit no longer shows is a not_voided conflict. A
// voided punch keeps its attendance event: the person was at the gate
// then, and a scan again is the same punch (docs/decisions.md).
func (j *factJudge) void() error {
	var conflict string
	var status VisitStatus
	if j.f.VisitID != "" {
		v, err := j.visit(j.f.VisitID)
		if err != nil {
			return err
		}
		if v == nil {
			conflict = ConflictUnknownVisit
		} else {
			status = v.Status
			if conflict, err = j.undo(v); err != nil {
				return err
			}
		}
	}
	ev := j.event(conflict, status)
	ev.Action = AuditEdgeAdmitVoided
	if j.f.VisitID == "" && j.f.PersonID != "" {
		ev.ObjectType, ev.ObjectID = "person", j.f.PersonID
	}
	var detail map[string]any
	_ = json.Unmarshal(ev.Detail, &detail) // event made it from a map
	delete(detail, "conflict")
	if conflict != "" {
		detail["conflict"] = conflict
	}
	detail["voids"] = j.f.Voids
	ev.Detail, _ = json.Marshal(detail)
	j.w.Conflict = conflict
	j.w.Audit = append(j.w.Audit, ev)
	return nil
}

// undo puts v back as it was before the admit at the fact's scan time,
// or returns ConflictNotVoided when v no longer shows that admit.
func (j *factJudge) undo(v *Visit) (string, error) {
	at := j.f.At
	in := v.Status == VisitCheckedIn && v.CheckedInAt != nil && v.CheckedInAt.Equal(at)
	switch {
	case in && v.ID != j.f.PassVisitID && v.Pass.ForVisitID != "" && v.Pass.ForVisitID != v.ID:
		// A re-entry's new visit: it never began. It is cancelled, and
		// the visit it was made from names it no longer.
		v.Status, v.CheckedInAt, v.CancelledAt, v.NeedsSomeone = VisitCancelled, nil, &at, false
		j.touch(v)
		seen := map[string]bool{}
		for id := j.f.PassVisitID; id != "" && !seen[id] && len(seen) < maxReentries; {
			seen[id] = true
			from, err := j.visit(id)
			if err != nil {
				return "", err
			}
			if from == nil {
				break
			}
			if from.ReenteredAs == v.ID {
				from.ReenteredAs = ""
				j.touch(from)
				break
			}
			id = from.ReenteredAs
		}
	case in:
		v.Status, v.CheckedInAt, v.NeedsSomeone, v.WaitingSince = VisitExpected, nil, false, nil
		v.Pass.Uses = max(0, v.Pass.Uses-1)
		j.touch(v)
	case v.Status == VisitCheckedOut && v.CheckedOutAt != nil && v.CheckedOutAt.Equal(at):
		v.Status, v.CheckedOutAt, v.NeedsSomeone = VisitCheckedIn, nil, len(v.Hosts) == 0
		j.touch(v)
	case v.Status == VisitCheckedIn && v.GateID == j.f.GateID && v.CheckedInAt != nil && v.CheckedInAt.Before(at):
		// An entered fact: the visitor checked in earlier at the desk
		// did not get through this gate after all. Only an entered
		// leaves a visit checked in before the scan time with the scan's
		// gate (a check-in or re-entry checks in at the scan time; a
		// check-out leaves it checked out).
		v.GateID = ""
		j.touch(v)
	default:
		return ConflictNotVoided, nil
	}
	return "", nil
}

// event is the audit record of a conflicting fact, by its edge.
func (j *factJudge) event(conflict string, status VisitStatus) AuditEvent {
	f := j.f
	detail := map[string]any{"fact_id": f.ID, "kind": f.Kind, "conflict": conflict, "at": f.At, "gate_id": f.GateID,
		"counter": f.Counter}
	if f.PassVisitID != "" {
		detail["pass_visit_id"] = f.PassVisitID
	}
	if status != "" {
		detail["status"] = status // the cloud's, when the fact arrived
	}
	if f.DeviceID != "" { // a desk's fact: its device, no gate
		delete(detail, "gate_id")
		detail["device_id"] = f.DeviceID
	}
	for k, v := range j.detail {
		detail[k] = v
	}
	raw, _ := json.Marshal(detail) // strings, numbers and a time always marshal
	return AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: j.t, Action: AuditEdgeFactConflicted, ActorKind: ActorEdge,
		ActorID: f.EdgeID, ObjectType: "visit", ObjectID: f.VisitID, Detail: raw, CreatedAt: j.now}
}

// SiteChanges returns the site's changes after sequence after (at most
// limit, protocol.MaxChanges when limit is outside 1..MaxChanges) and the
// feed's head, for a resync. ErrNotFound for a site that does not exist.
func (s *Service) SiteChanges(ctx context.Context, site protocol.Site, after uint64, limit int) ([]protocol.Change, uint64, error) {
	if !site.Valid() {
		return nil, 0, ErrNotFound
	}
	t, siteID := SiteTenant(site)
	return s.store.SiteChanges(ctx, t, siteID, after, limit)
}

// FeedHead returns the head of the site's feed (Store.FeedHead): 0 for a
// site that does not exist.
func (s *Service) FeedHead(ctx context.Context, site protocol.Site) (uint64, error) {
	if !site.Valid() {
		return 0, nil
	}
	t, siteID := SiteTenant(site)
	return s.store.FeedHead(ctx, t, siteID)
}

// SiteSnapshot returns the site's whole state as its edge needs it now
// (EdgeSnapshot); the caller splits it into the protocol's parts.
// ErrNotFound for a site that does not exist.
func (s *Service) SiteSnapshot(ctx context.Context, site protocol.Site) (EdgeSnapshot, error) {
	if !site.Valid() {
		return EdgeSnapshot{}, ErrNotFound
	}
	t, siteID := SiteTenant(site)
	return s.store.SiteSnapshot(ctx, t, siteID, s.Now())
}

// PublishFeeds hands fn what the sites' feeds hold that has not been
// published, as Store.PublishFeeds does.
func (s *Service) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	return s.store.PublishFeeds(ctx, limit, fn)
}

// RecordEdgeStatus stores an edge's status, received now, and certifies
// the walk-in badge key it carries (certifyBadgeKey). A status that is not
// well formed, or from an edge that is not one of the site's, returns an
// error wrapping ErrEdgeRejected; so does a badge key the cloud will not
// certify, after the status itself was recorded.
func (s *Service) RecordEdgeStatus(ctx context.Context, site protocol.Site, st protocol.Status) error {
	if !site.Valid() {
		return fmt.Errorf("%w: %q is not a site's topic prefix", ErrEdgeRejected, site.Prefix())
	}
	if _, err := protocol.Encode(&st); err != nil {
		return fmt.Errorf("%w: %w", ErrEdgeRejected, err)
	}
	e, err := s.siteEdge(ctx, site, st.EdgeID)
	if err != nil {
		return err
	}
	t, siteID := SiteTenant(site)
	err = s.store.RecordEdgeStatus(ctx, t, siteID, st, s.Now())
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: edge %s is not one of site %s's", ErrEdgeRejected, st.EdgeID, site.Prefix())
	}
	if err != nil {
		return err
	}
	if st.BadgeKey != nil {
		if err := s.certifyBadgeKey(ctx, e, st.BadgeKey); err != nil {
			return err
		}
	}
	// edge.online or edge.offline, when the status changed what the
	// cloud shows; should this fail, EdgeAnnouncer fires it later.
	if e, err = s.store.Edge(ctx, st.EdgeID); err == nil {
		_, err = s.announceEdge(ctx, e)
	}
	if err != nil {
		return fmt.Errorf("status of edge %s recorded, its state event left to the next announcement round: %w", st.EdgeID, err)
	}
	return nil
}

// certifyBadgeKey certifies the walk-in badge key an edge's status
// carries, for the edge's site alone, the first time the edge sends it
// (docs/decisions.md, "Offline walk-in badge passes (issue 16)"). Every
// status carries it again, so a certification lost to an outage is made
// on the next one. An edge that sends another key than the one certified
// is refused (ErrEdgeRejected): the first key stays, since badges already
// printed depend on it, and a thief of the edge's broker credentials must
// not swap in a key of their own. So is a key whose ID is taken, and an
// edge revoked since it was read.
func (s *Service) certifyBadgeKey(ctx context.Context, e Edge, pub []byte) error {
	switch {
	case bytes.Equal(e.BadgeKey, pub):
		return nil
	case e.BadgeKey != nil:
		return fmt.Errorf("%w: edge %s sends another badge key than the one certified at %s; the certified key stays (revoke the edge to replace the appliance)",
			ErrEdgeRejected, e.ID, e.BadgeKeyAt.Format(time.RFC3339))
	}
	err := s.store.CertifyBadgeKey(ctx, e.Tenant, e.SiteID, e.ID, pub, s.Now())
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: edge %s is no longer an edge of site %s that may sync", ErrEdgeRejected, e.ID, e.SiteID)
	case errors.Is(err, ErrConflict):
		return fmt.Errorf("%w: badge key of edge %s: %w", ErrEdgeRejected, e.ID, err)
	case err != nil:
		return fmt.Errorf("certify badge key of edge %s: %w", e.ID, err)
	}
	return nil
}

// Edges returns the tenant's edges at the site, or at every site when
// siteID is empty, oldest first. An edge that said it was online and has
// been silent for EdgeSilentAfter is offline since then.
func (s *Service) Edges(ctx context.Context, t Tenant, siteID string) ([]Edge, error) {
	edges, err := s.store.ListEdges(ctx, t, siteID)
	if err != nil {
		return nil, err
	}
	return edges, s.present(ctx, t, "", edges)
}

// Edge returns the tenant's edge as Edges presents it; ErrNotFound when
// the tenant has none with this ID (another organisation's or mode's
// included).
func (s *Service) Edge(ctx context.Context, t Tenant, id string) (Edge, error) {
	if !ids.Valid(ids.Edge, id) {
		return Edge{}, ErrNotFound
	}
	e, err := s.store.Edge(ctx, id)
	if err != nil {
		return Edge{}, err
	}
	if e.Tenant != t {
		return Edge{}, ErrNotFound
	}
	shown := []Edge{e}
	err = s.present(ctx, t, id, shown)
	return shown[0], err
}
