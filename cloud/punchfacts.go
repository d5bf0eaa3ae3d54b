package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// punchFromFact records the attendance event of a punch fact from an
// edge of the tenant's site: source gate, the gate's direction as the
// edge decided it, the scan time as occurred_at, once per fact ID (a
// fact sent again finds its punch; the same person at the same gate
// within PunchRepeat is the earlier punch, as through the API). A punch
// by no person of the organisation is not recorded (ConflictUnknownPerson);
// a deactivated person's is recorded all the same, since the gate let
// them through (ConflictPersonInactive). It returns the conflict, or an
// error of the store's, when the fact must be applied again later.
func (s *Service) punchFromFact(ctx context.Context, t Tenant, siteID string, f protocol.Fact, gateOK bool, now time.Time) (string, error) {
	person, err := s.store.Person(ctx, t, f.PersonID)
	if errors.Is(err, ErrNotFound) {
		return ConflictUnknownPerson, nil
	}
	if err != nil {
		return "", err
	}
	site, err := s.store.Site(ctx, t, siteID)
	if err != nil {
		return "", fmt.Errorf("punch: site: %w", err)
	}
	kind := PunchIn
	if f.Direction == protocol.DirectionOut {
		kind = PunchOut
	}
	e := AttendanceEvent{ID: ids.New(ids.AttendanceEvent), Tenant: t, PersonID: person.ID, SiteID: siteID, Kind: kind,
		Source: SourceGate, OccurredAt: f.At, ReceivedAt: now, EdgeID: f.EdgeID, FactID: f.ID, CreatedAt: now}
	if gateOK {
		e.GateID = f.GateID
	}
	if _, _, err := s.punch(ctx, t, site, e); err != nil {
		return "", fmt.Errorf("punch: %w", err)
	}
	if !person.Active {
		return ConflictPersonInactive, nil
	}
	return "", nil
}
