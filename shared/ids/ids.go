// Package ids makes and checks the TypeID identifiers every object carries.
//
// It may import only the standard library and go.jetify.com/typeid.
package ids

import (
	"fmt"

	"go.jetify.com/typeid"
)

// Prefixes of the identifiers the system hands out. The spec names visit,
// person, team, site, gate, booking, visitor and tsp; the rest are ours
// (docs/decisions.md).
const (
	Organisation    = "org"
	Site            = "site"
	Gate            = "gate"
	Person          = "person"
	Team            = "team"
	Key             = "key"
	Request         = "req"
	Visit           = "visit"
	Visitor         = "visitor"
	Booking         = "booking"
	BookingType     = "booking_type"
	TimesheetPeriod = "tsp"
	Message         = "msg"
	AuditEvent      = "audit"
	Event           = "evt"
	Edge            = "edge"
	Fact            = "fact"
	Change          = "chg"
	WebhookEndpoint = "we"
	WebhookAttempt  = "wha"
	AttendanceEvent = "att"
	Timesheet       = "ts"
	Evidence        = "evd"
	Kiosk           = "kiosk"
	Rollout         = "rollout"
)

// New returns a fresh TypeID (UUIDv7 suffix) with the given prefix. It
// panics only if prefix is not a valid TypeID prefix, which is a programming
// error: prefixes are the constants above.
func New(prefix string) string {
	id, err := typeid.WithPrefix(prefix)
	if err != nil {
		panic(fmt.Sprintf("ids: bad prefix %q: %v", prefix, err))
	}
	return id.String()
}

// Valid reports whether s is an identifier with the given prefix, matching
// ^<prefix>_[0-7][0-9a-hjkmnp-tv-z]{25}$ exactly. It does not allocate: it
// runs on every path ID and filter of every request.
func Valid(prefix, s string) bool {
	n := len(prefix)
	if len(s) != n+27 || s[:n] != prefix || s[n] != '_' {
		return false
	}
	suffix := s[n+1:]
	if suffix[0] < '0' || suffix[0] > '7' {
		return false
	}
	for i := 1; i < len(suffix); i++ {
		if !isCrockford(suffix[i]) {
			return false
		}
	}
	return true
}

// isCrockford reports whether c is in the lower-case Crockford base32
// alphabet TypeIDs use (no i, l, o, u).
func isCrockford(c byte) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case c >= 'a' && c <= 'z':
		return c != 'i' && c != 'l' && c != 'o' && c != 'u'
	}
	return false
}
