package passrule

import (
	"slices"
	"strconv"
)

// Bounds Validate enforces. A window longer than a week is better expressed
// by the visit's own expected_at and expected_until; twenty gates is more
// than any site we know has, and bounds the work a gate does per scan.
const (
	MaxWindowMinutes = 7 * 24 * 60
	MaxGateIDs       = 20
)

// Daily limits admission to hours of the day in the site's time zone:
// [From, Until). Until < From spans midnight (22:00–06:00 admits from 22:00
// through 05:59). From == Until is invalid: it could mean "never" or "all
// day", and all day is what a nil Daily says. Validate rejects it; Decide,
// given one anyway, admits at no hour, since a gate fails closed.
type Daily struct{ From, Until Clock }

// Contains reports whether the site-local time of day c falls in [From,
// Until), wrapping past midnight when Until < From.
func (d Daily) Contains(c Clock) bool {
	switch {
	case d.From < d.Until:
		return d.From <= c && c < d.Until
	case d.Until < d.From:
		return c >= d.From || c < d.Until
	default:
		return false
	}
}

// Window widens the visit's expected period: Before minutes before
// expected_at and After minutes after expected_until.
type Window struct{ Before, After int }

// Rules are a pass's rules, as the API's pass rules object holds them.
type Rules struct {
	Daily     *Daily // nil: any time of day
	Window    Window
	SingleUse bool
	GateIDs   []string // empty: every gate at the visit's site
}

// FieldError is one problem Validate found. Field is a path relative to the
// rules object, named as the JSON API names it ("daily.from",
// "gate_ids[3]"), so the caller only prefixes where the rules sit in its
// request.
type FieldError struct{ Field, Message string }

// Error returns "field: message".
func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate returns every problem with r, or nil. It checks bounds, daily
// hours and repeated gate IDs; whether each gate exists, and is at the
// visit's site, needs storage and is the caller's check. A gate_ids list
// longer than MaxGateIDs is reported once and its items are not checked,
// so an oversized request costs no more than a valid one.
func (r Rules) Validate() []FieldError {
	var errs []FieldError
	add := func(field, msg string) { errs = append(errs, FieldError{field, msg}) }

	if d := r.Daily; d != nil {
		okFrom, okUntil := d.From.Valid(), d.Until.Valid()
		if !okFrom {
			add("daily.from", errClock.Error())
		}
		if !okUntil {
			add("daily.until", errClock.Error())
		}
		if okFrom && okUntil && d.From == d.Until {
			add("daily", "from and until must differ; leave daily out to admit at any time of day")
		}
	}

	// Messages are built only for an error: a valid visit's check (every
	// scan's record checks one) allocates nothing.
	windowMsg := func() string { return "must be from 0 to " + strconv.Itoa(MaxWindowMinutes) + " minutes" }
	if b := r.Window.Before; b < 0 || b > MaxWindowMinutes {
		add("window.before", windowMsg())
	}
	if a := r.Window.After; a < 0 || a > MaxWindowMinutes {
		add("window.after", windowMsg())
	}

	if len(r.GateIDs) > MaxGateIDs {
		add("gate_ids", "must hold at most "+strconv.Itoa(MaxGateIDs)+" gate IDs")
		return errs
	}
	for i, id := range r.GateIDs {
		field := func() string { return "gate_ids[" + strconv.Itoa(i) + "]" }
		if id == "" {
			add(field(), "may not be empty")
			continue
		}
		for j := range i {
			if r.GateIDs[j] == id {
				add(field(), "repeats gate_ids["+strconv.Itoa(j)+"]")
				break
			}
		}
	}
	return errs
}

func (r Rules) allowsGate(id string) bool {
	return len(r.GateIDs) == 0 || slices.Contains(r.GateIDs, id)
}
