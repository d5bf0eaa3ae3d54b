package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// This file is an edge's hardware configured from the cloud
// (docs/decisions.md, "Hardware from the cloud (issue 17)"): PATCH
// /v1/edges/{edge_id} stores it on the edge, and the site's feed carries
// it to the appliance in the same transaction.

// EdgeInput changes an edge. Hardware set to nil clears the edge's
// hardware: the appliance goes back to its configuration file's gates.
type EdgeInput struct {
	Name     Optional[string]
	Hardware Optional[*hardware.Document]
}

// UpdateEdge changes the tenant's edge: its name, its hardware or both. A
// hardware document must have passed hardware.Parse (the API decodes it
// with the appliance's own code); here each of its gates must be one of the
// edge's site's, else a *ValidationError at hardware.gates[i].gate_id. A
// revoked edge's hardware cannot change (*StateError). A hardware that
// changes goes out on the site's feed, addressed to this edge, in the
// transaction that stores it. ErrNotFound when the tenant has no such edge.
func (s *Service) UpdateEdge(ctx context.Context, t Tenant, id string, in EdgeInput) (Edge, error) {
	before, err := s.Edge(ctx, t, id)
	if err != nil {
		return Edge{}, fmt.Errorf("update edge: %w", err)
	}
	var v ValidationError
	checkEdgeInput(&v, in)
	if in.Hardware.Set && in.Hardware.Value != nil {
		if err := s.checkHardwareGates(ctx, &v, t, before.SiteID, *in.Hardware.Value); err != nil {
			return Edge{}, fmt.Errorf("update edge: %w", err)
		}
	}
	if err := v.Err(); err != nil {
		return Edge{}, err
	}
	if in.Hardware.Set && before.RevokedAt != nil {
		return Edge{}, &StateError{Object: "edge", State: "revoked", Action: "configure the hardware of"}
	}
	e, err := s.store.UpdateEdge(ctx, t, id, s.Now(), func(e *Edge) error {
		if in.Name.Set {
			e.Name = in.Name.Value
		}
		if in.Hardware.Set {
			e.Hardware = nil
			if in.Hardware.Value != nil {
				doc := in.Hardware.Value.Clone()
				e.Hardware = &doc
			}
		}
		return nil
	})
	if err != nil {
		return Edge{}, fmt.Errorf("update edge: %w", err)
	}
	return e.Presented(s.Now()), nil
}

// ValidateEdge returns what is wrong with in that needs no edge to tell
// (its name), as a *ValidationError; UpdateEdge checks it again, and the
// gates against the edge's site.
func (s *Service) ValidateEdge(in EdgeInput) error {
	var v ValidationError
	checkEdgeInput(&v, in)
	return v.Err()
}

func checkEdgeInput(v *ValidationError, in EdgeInput) {
	if in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
}

// checkHardwareGates adds a problem for each gate of doc that is not one
// of the site's.
func (s *Service) checkHardwareGates(ctx context.Context, v *ValidationError, t Tenant, siteID string, doc hardware.Document) error {
	for i, g := range doc.Gates {
		field := fmt.Sprintf("hardware.gates[%d].gate_id", i)
		if !checkID(v, field, ids.Gate, g.ID) {
			continue
		}
		gate, err := s.store.Gate(ctx, t, g.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add(field, "no gate with this ID")
		case err != nil:
			return err
		case gate.SiteID != siteID:
			v.Add(field, "is a gate of another site: an appliance drives its own site's gates (%s)", siteID)
		}
	}
	return nil
}

// EdgeHardware is the hardware an edge's appliance drives, as its site's
// feed carries it: the document, or null when the cloud holds none.
func EdgeHardware(e Edge) *protocol.EdgeHardware {
	h := &protocol.EdgeHardware{EdgeID: e.ID}
	if e.Hardware != nil {
		doc := e.Hardware.Clone()
		h.Hardware = &doc
	}
	return h
}

// HardwareChange is the change of the edge's site's feed that carries its
// hardware, at at.
func HardwareChange(e Edge, at time.Time) protocol.Change {
	return protocol.Change{At: at, Hardware: EdgeHardware(e)}
}

// EncodeHardware is how stores keep an edge's hardware: the document's
// JSON, "" for none.
func EncodeHardware(doc *hardware.Document) (string, error) {
	if doc == nil {
		return "", nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("edge hardware: %w", err)
	}
	return string(b), nil
}

// DecodeHardware reads what EncodeHardware wrote, as strictly as the
// appliance reads it.
func DecodeHardware(s string) (*hardware.Document, error) {
	if s == "" {
		return nil, nil
	}
	var doc hardware.Document
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("edge hardware: %w", err)
	}
	return &doc, nil
}
