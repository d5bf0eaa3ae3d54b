// Package ids makes and checks the TypeID identifiers every object carries.
//
// It may import only the standard library (its tests check it against
// go.jetify.com/typeid, the reference implementation).
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
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
//
// The UUID is made as go.jetify.com/typeid makes it (gofrs/uuid's NewV7:
// the Unix time in milliseconds, a 12-bit sequence, random from the start
// and counting up while the millisecond does not advance, and 62 random
// bits) and written out here, in one allocation, the string, where the
// library's path makes five; every gate scan makes a fact ID.
func New(prefix string) string {
	if !validPrefix(prefix) {
		panic(fmt.Sprintf("ids: bad prefix %q", prefix))
	}
	var u [16]byte
	ms, seq := v7.next()
	binary.BigEndian.PutUint64(u[:8], ms<<16|uint64(seq))
	u[6] = u[6]&0x0f | 0x70 // version 7
	if _, err := rand.Read(u[8:]); err != nil {
		panic(fmt.Sprintf("ids: random bits: %v", err)) // crypto/rand does not fail on Linux
	}
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	var buf [63 + 1 + 26]byte
	b := append(buf[:0], prefix...)
	if prefix != "" {
		b = append(b, '_') // the spec's empty prefix has none
	}
	start := len(b)
	hi, lo := binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
	b = b[:start+26]
	for i := len(b) - 1; i >= start; i-- {
		b[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(b)
}

// crockford is the lower-case Crockford base32 alphabet of TypeID suffixes.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// validPrefix reports whether p is a TypeID prefix: up to 63 lower-case
// letters and underscores, neither starting nor ending with an underscore.
func validPrefix(p string) bool {
	if len(p) > 63 || (len(p) > 0 && (p[0] == '_' || p[len(p)-1] == '_')) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if (p[i] < 'a' || p[i] > 'z') && p[i] != '_' {
			return false
		}
	}
	return true
}

// v7 is the clock of New's UUIDs.
var v7 = &clock{now: time.Now}

type clock struct {
	mu   sync.Mutex
	now  func() time.Time
	last uint64 // Unix milliseconds of the last UUID
	seq  uint16
	init bool
}

// next returns the millisecond and the sequence of the next UUID: the
// sequence counts up from a random start while the clock stays at or
// behind the last UUID's millisecond, as gofrs/uuid's does.
func (c *clock) next() (uint64, uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.init {
		var b [2]byte
		_, _ = rand.Read(b[:])
		c.seq, c.init = binary.BigEndian.Uint16(b[:]), true
	}
	ms := uint64(c.now().UnixMilli())
	if ms <= c.last {
		c.seq++
	}
	c.last = ms
	return ms, c.seq
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
