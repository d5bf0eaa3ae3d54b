package storedoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/svc-vms/svc/sync/protocol"
)

// change is the body of a site feed row: the one object of a
// protocol.Change, whose sequence and time are the row's columns. The
// objects are stored in their wire form on purpose: the feed is the queue
// of what the site's edge is sent, and a row published later must say
// what it said when it was written. A protocol change that stored rows no
// longer decode under is a new feed, not a rewrite of this one.
type change struct {
	Visit    *protocol.Visit    `json:"visit,omitempty"`
	Gate     *protocol.Gate     `json:"gate,omitempty"`
	Settings *protocol.Settings `json:"settings,omitempty"`
	Key      *protocol.Key      `json:"key,omitempty"`
	Person   *protocol.Person   `json:"person,omitempty"`
	// Team and VisitType are for the reception kiosk (issue 16).
	Team      *protocol.Team      `json:"team,omitempty"`
	VisitType *protocol.VisitType `json:"visit_type,omitempty"`
	// Hardware is an edge's hardware (issue 17).
	Hardware *protocol.EdgeHardware `json:"hardware,omitempty"`
}

// EncodeChange returns the feed body of c, whose sequence and time are
// left out; an error wrapping protocol.ErrInvalid when c does not hold
// exactly one object that passes the protocol's checks.
func EncodeChange(c protocol.Change) ([]byte, error) {
	d := change{Visit: c.Visit, Gate: c.Gate, Settings: c.Settings, Key: c.Key, Person: c.Person, Team: c.Team, VisitType: c.VisitType,
		Hardware: c.Hardware}
	if err := d.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode feed change: %w", err)
	}
	return b, nil
}

// DecodeChange reads a feed row back: strictly, as the edge would read
// the change (unknown fields and failed checks are errors).
func DecodeChange(seq uint64, at time.Time, body []byte) (protocol.Change, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var d change
	if err := dec.Decode(&d); err != nil {
		return protocol.Change{}, fmt.Errorf("decode feed change %d: %w", seq, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return protocol.Change{}, fmt.Errorf("decode feed change %d: data after the change", seq)
	}
	if err := d.validate(); err != nil {
		return protocol.Change{}, fmt.Errorf("decode feed change %d: %w", seq, err)
	}
	return protocol.Change{Seq: seq, At: at.UTC(), Visit: d.Visit, Gate: d.Gate, Settings: d.Settings, Key: d.Key, Person: d.Person,
		Team: d.Team, VisitType: d.VisitType, Hardware: d.Hardware}, nil
}

// VisitID returns the ID of the visit a change body holds, or "".
func VisitID(c protocol.Change) string {
	if c.Visit == nil {
		return ""
	}
	return c.Visit.ID
}

// ScrubVisitorName returns the body with the visit's visitor name
// removed, or body itself when it holds no name.
func ScrubVisitorName(body []byte) ([]byte, error) {
	var d change
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("scrub feed change: %w", err)
	}
	if d.Visit == nil || d.Visit.VisitorName == "" {
		return body, nil
	}
	d.Visit.VisitorName = ""
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("scrub feed change: %w", err)
	}
	return b, nil
}

func (d *change) validate() error {
	n := 0
	var err error
	if d.Visit != nil {
		n, err = n+1, protocol.Validate(d.Visit)
	}
	if err == nil && d.Gate != nil {
		n, err = n+1, protocol.Validate(d.Gate)
	}
	if err == nil && d.Settings != nil {
		n, err = n+1, protocol.Validate(d.Settings)
	}
	if err == nil && d.Key != nil {
		n, err = n+1, protocol.Validate(d.Key)
	}
	if err == nil && d.Person != nil {
		n, err = n+1, protocol.Validate(d.Person)
	}
	if err == nil && d.Team != nil {
		n, err = n+1, protocol.Validate(d.Team)
	}
	if err == nil && d.VisitType != nil {
		n, err = n+1, protocol.Validate(d.VisitType)
	}
	if err == nil && d.Hardware != nil {
		n, err = n+1, protocol.Validate(d.Hardware)
	}
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: a change holds %d objects, not 1", protocol.ErrInvalid, n)
	}
	return nil
}
