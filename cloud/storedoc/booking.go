package storedoc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/passrule"
)

// booking is what a booking stores beyond its indexed columns (ID, tenant,
// type, site, visitor, status, starts_at, confirm_by, visit and the row's
// times).
type booking struct {
	EndsAt        time.Time         `json:"ends_at"`
	ConfirmedAt   *time.Time        `json:"confirmed_at,omitempty"`
	DeclinedAt    *time.Time        `json:"declined_at,omitempty"`
	DeclineReason string            `json:"decline_reason,omitempty"`
	CancelledAt   *time.Time        `json:"cancelled_at,omitempty"`
	Purpose       string            `json:"purpose,omitempty"`
	CustomFields  map[string]string `json:"custom_fields,omitempty"` // each value's text, as a visit keeps them
}

// openingHours is one span of a booking type's week. Days are
// time.Weekday numbers (0 is Sunday); From and Until are minutes after
// midnight, as pass rules store times of day.
type openingHours struct {
	Days  []int `json:"days"`
	From  int   `json:"from"`
	Until int   `json:"until"`
}

// EncodeBooking returns the document of b. Times are stored in UTC to the
// microsecond, like the columns beside it.
func EncodeBooking(b cloud.Booking) ([]byte, error) {
	d := booking{
		EndsAt:        micro(b.EndsAt),
		ConfirmedAt:   micros(b.ConfirmedAt),
		DeclinedAt:    micros(b.DeclinedAt),
		DeclineReason: b.DeclineReason,
		CancelledAt:   micros(b.CancelledAt),
		Purpose:       b.Purpose,
	}
	if len(b.CustomFields) > 0 {
		d.CustomFields = make(map[string]string, len(b.CustomFields))
		for k, raw := range b.CustomFields {
			d.CustomFields[k] = string(raw)
		}
	}
	out, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode booking document: %w", err)
	}
	return out, nil
}

// DecodeBooking fills the fields of b the document holds. CustomFields
// comes back empty rather than nil, as a visit's do.
func DecodeBooking(data []byte, b *cloud.Booking) error {
	var d booking
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("decode booking document: %w", err)
	}
	b.EndsAt, b.ConfirmedAt, b.DeclinedAt, b.CancelledAt = d.EndsAt, d.ConfirmedAt, d.DeclinedAt, d.CancelledAt
	b.DeclineReason, b.Purpose = d.DeclineReason, d.Purpose
	b.CustomFields = make(map[string]json.RawMessage, len(d.CustomFields))
	for k, s := range d.CustomFields {
		b.CustomFields[k] = json.RawMessage(s)
	}
	return nil
}

// EncodeHours returns the document of a booking type's opening hours: a
// JSON array, [] when there are none.
func EncodeHours(hs []cloud.OpeningHours) ([]byte, error) {
	d := make([]openingHours, len(hs))
	for i, h := range hs {
		days := make([]int, len(h.Days))
		for j, day := range h.Days {
			days[j] = int(day)
		}
		d[i] = openingHours{Days: days, From: int(h.From), Until: int(h.Until)}
	}
	out, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode opening hours: %w", err)
	}
	return out, nil
}

// DecodeHours reads what EncodeHours wrote. The list and each span's Days
// come back empty rather than nil.
func DecodeHours(data []byte) ([]cloud.OpeningHours, error) {
	var d []openingHours
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode opening hours: %w", err)
	}
	out := make([]cloud.OpeningHours, len(d))
	for i, h := range d {
		days := make([]time.Weekday, len(h.Days))
		for j, day := range h.Days {
			days[j] = time.Weekday(day)
		}
		out[i] = cloud.OpeningHours{Days: days, From: passrule.Clock(h.From), Until: passrule.Clock(h.Until)}
	}
	return out, nil
}
