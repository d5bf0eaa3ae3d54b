package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// Visits are stored in a binary form rather than the protocol's JSON: the
// file of 100,000 visits is a fifth of the size and opens several times
// faster, and Open touches that much less of the map. The form is this
// package's alone: the wire keeps its JSON, and a visit is validated with
// protocol.Validate after it is decoded, as strictly as one off the wire.
//
// A value is the version byte visitV1, then in order:
//
//	id              16 bytes: the UUID of the visit's ID (uid, big-endian halves)
//	status          1 byte: an index in storedStatuses
//	flags           uvarint: the visitHas… bits below; any other bit is an error
//	expected_at     varint Unix microseconds, when visitHasExpectedAt
//	expected_until  varint, when visitHasExpectedUntil
//	checked_in_at   varint, when visitHasCheckedInAt
//	checked_out_at  varint, when visitHasCheckedOutAt
//	window          uvarint before, uvarint after (minutes)
//	daily           uvarint from, uvarint until (minutes of the day), when visitHasDaily
//	gate_ids        uvarint count, then each as a string
//	uses            uvarint
//	for_visit_id    16 bytes, when visitHasForVisit (otherwise the visit's own ID)
//	reentered_as    16 bytes, when visitHasReentered
//	visitor_name    string
//	host_name       string
//
// A string is a uvarint length and the bytes. Nothing may follow. JSON
// values begin with '{', never visitV1, so the version byte also tells the
// two forms apart (schema 1 files hold JSON; Open migrates them).
//
// Version visitV2 (issue 16: what the reception kiosk shows) is visitV1
// with these after host_name, and the flag bits from visitHasHostID on:
//
//	type            string
//	source          1 byte: an index in storedSources (0: none)
//	audience        1 byte: an index in storedAudiences (0: none)
//	host_id         16 bytes, when visitHasHostID
//	team_id         16 bytes and team_name string, when visitHasTeam
//	waiting_since   varint, when visitHasWaitingSince
//	visitor_id      16 bytes, when visitHasVisitorID
//	visitor_email, visitor_phone, visitor_company   strings
//
// needs_someone is the flag visitNeedsSomeone. A value of visitV1 reads
// with none of them.
//
// Version visitV3 (issue 16: entering after a desk check-in) is visitV2
// with this after visitor_company, and the flag bits from visitHasGate on:
//
//	gate_id         16 bytes, when visitHasGate
//
// at_desk is the flag visitAtDesk. A value of visitV1 or visitV2 reads
// with no gate_id and at_desk false: a visit checked in at the desk before
// this build is not let through an entry gate (already_in, as then),
// rather than a visit checked in at a gate being let in twice. This build
// writes visitV4.
//
// Version visitV4 (issue 16: whom a visit nobody has taken waits with) is
// visitV3 with this after gate_id, and the flag bit visitHasReceiver:
//
//	receiver        1 byte: an index in storedReceivers (0: none)
//	receiver_id     16 bytes, when visitHasReceiver
//
// A value of an older version reads with no receiver.
const (
	visitV1 = 0x01
	visitV2 = 0x02
	visitV3 = 0x03
	visitV4 = 0x04
)

const (
	visitHasExpectedAt = 1 << iota
	visitHasExpectedUntil
	visitHasCheckedInAt
	visitHasCheckedOutAt
	visitHasDaily
	visitSingleUse
	visitRevoked
	visitHasForVisit
	visitHasReentered
	visitFlagsV1 = 1<<iota - 1

	visitHasHostID = 1 << (iota - 1)
	visitHasTeam
	visitHasWaitingSince
	visitHasVisitorID
	visitNeedsSomeone
	visitFlagsV2 = 1<<(iota-1) - 1

	visitHasGate = 1 << (iota - 2)
	visitAtDesk
	visitFlagsV3 = 1<<(iota-2) - 1

	visitHasReceiver = 1 << (iota - 3)

	visitFlagsKnown = 1<<(iota-3) - 1
)

// storedReceivers numbers the receiver a visit waits with, from 1 (0 is
// none). Append only.
var storedReceivers = [...]string{"", protocol.ToReception, protocol.ToPerson, protocol.ToTeam}

// storedSources and storedAudiences number a visit's source and audience
// in the file, from 1 (0 is none). Append only.
var (
	storedSources   = [...]string{"", "invitation", "pre_registration", "walk_in", "booking"}
	storedAudiences = [...]string{"", "person", "people", "team", "desk"}
)

// storedStatuses numbers the statuses in the file. Append only: the
// index is what is stored.
var storedStatuses = [...]passrule.Status{
	passrule.Expected, passrule.AwaitingApproval, passrule.CheckedIn, passrule.CheckedOut,
	passrule.Denied, passrule.Cancelled, passrule.NoShow,
}

// errShort is returned by the readers when a value ends early.
var errShort = errors.New("value ends early")

// encodeVisit returns the stored form of a normalized, valid visit. It
// fails only for a value the form cannot hold, which a valid visit never
// has.
func encodeVisit(v *protocol.Visit) ([]byte, error) {
	return appendVisit(make([]byte, 0, 176+len(v.VisitorName)+len(v.HostName)+32*len(v.Rules.GateIDs)+len(v.Type)+len(v.TeamName)+
		len(v.VisitorEmail)+len(v.VisitorPhone)+len(v.VisitorCompany)), v)
}

// appendVisit appends the stored form of a normalized, valid visit to b
// (encodeVisit).
func appendVisit(b []byte, v *protocol.Visit) ([]byte, error) {
	u, ok := visitUID(v.ID)
	if !ok {
		return nil, fmt.Errorf("id %q is not a visit ID", v.ID)
	}
	status := -1
	for i, s := range storedStatuses {
		if string(s) == v.Status {
			status = i
		}
	}
	if status < 0 {
		return nil, fmt.Errorf("status %q is not a visit status", v.Status)
	}
	if v.Uses < 0 || v.Rules.Window.Before < 0 || v.Rules.Window.After < 0 {
		return nil, fmt.Errorf("uses or window negative")
	}
	var flags uint64
	times := [...]*time.Time{v.ExpectedAt, v.ExpectedUntil, v.CheckedInAt, v.CheckedOutAt}
	for i, t := range times {
		if t != nil {
			flags |= visitHasExpectedAt << i
		}
	}
	if d := v.Rules.Daily; d != nil {
		if !d.From.Valid() || !d.Until.Valid() {
			return nil, fmt.Errorf("daily %+v is out of range", *d)
		}
		flags |= visitHasDaily
	}
	if v.Rules.SingleUse {
		flags |= visitSingleUse
	}
	if v.Revoked {
		flags |= visitRevoked
	}
	receiverPrefix := ids.Person
	if v.Receiver == protocol.ToTeam {
		receiverPrefix = ids.Team
	}
	// The uids by index, not by pointer: pointers into locals would move
	// them to the heap, five allocations a visit.
	var refs [5]uid
	for i, x := range [...]struct {
		id     string
		prefix string
		flag   uint64
	}{{v.HostID, ids.Person, visitHasHostID}, {v.TeamID, ids.Team, visitHasTeam}, {v.VisitorID, ids.Visitor, visitHasVisitorID},
		{v.GateID, ids.Gate, visitHasGate}, {v.ReceiverID, receiverPrefix, visitHasReceiver}} {
		if x.id == "" {
			continue
		}
		if refs[i], ok = parseUID(x.prefix, x.id); !ok {
			return nil, fmt.Errorf("%q is not a %s ID", x.id, x.prefix)
		}
		flags |= x.flag
	}
	host, team, visitor, gate, receiver := refs[0], refs[1], refs[2], refs[3], refs[4]
	if v.WaitingSince != nil {
		flags |= visitHasWaitingSince
	}
	if v.NeedsSomeone {
		flags |= visitNeedsSomeone
	}
	if v.AtDesk {
		flags |= visitAtDesk
	}
	source, audience := slices.Index(storedSources[:], v.Source), slices.Index(storedAudiences[:], v.Audience)
	receiverKind := slices.Index(storedReceivers[:], v.Receiver)
	if source < 0 || audience < 0 || receiverKind < 0 {
		return nil, fmt.Errorf("source %q, audience %q or receiver %q unknown", v.Source, v.Audience, v.Receiver)
	}
	var forVisit, reentered uid
	if v.ForVisitID != v.ID {
		if forVisit, ok = visitUID(v.ForVisitID); !ok {
			return nil, fmt.Errorf("for_visit_id %q is not a visit ID", v.ForVisitID)
		}
		flags |= visitHasForVisit
	}
	if v.ReenteredAs != "" {
		if reentered, ok = visitUID(v.ReenteredAs); !ok {
			return nil, fmt.Errorf("reentered_as %q is not a visit ID", v.ReenteredAs)
		}
		flags |= visitHasReentered
	}

	b = append(b, visitV4)
	b = appendUID(b, u)
	b = append(b, byte(status))
	b = binary.AppendUvarint(b, flags)
	for _, t := range times {
		if t != nil {
			b = binary.AppendVarint(b, t.UnixMicro())
		}
	}
	b = binary.AppendUvarint(b, uint64(v.Rules.Window.Before))
	b = binary.AppendUvarint(b, uint64(v.Rules.Window.After))
	if d := v.Rules.Daily; d != nil {
		b = binary.AppendUvarint(b, uint64(d.From))
		b = binary.AppendUvarint(b, uint64(d.Until))
	}
	b = binary.AppendUvarint(b, uint64(len(v.Rules.GateIDs)))
	for _, g := range v.Rules.GateIDs {
		b = appendString(b, g)
	}
	b = binary.AppendUvarint(b, uint64(v.Uses))
	if flags&visitHasForVisit != 0 {
		b = appendUID(b, forVisit)
	}
	if flags&visitHasReentered != 0 {
		b = appendUID(b, reentered)
	}
	b = appendString(b, v.VisitorName)
	b = appendString(b, v.HostName)
	b = appendString(b, v.Type)
	b = append(b, byte(source), byte(audience))
	if flags&visitHasHostID != 0 {
		b = appendUID(b, host)
	}
	if flags&visitHasTeam != 0 {
		b = appendUID(b, team)
		b = appendString(b, v.TeamName)
	}
	if v.WaitingSince != nil {
		b = binary.AppendVarint(b, v.WaitingSince.UnixMicro())
	}
	if flags&visitHasVisitorID != 0 {
		b = appendUID(b, visitor)
	}
	b = appendString(b, v.VisitorEmail)
	b = appendString(b, v.VisitorPhone)
	b = appendString(b, v.VisitorCompany)
	if flags&visitHasGate != 0 {
		b = appendUID(b, gate)
	}
	b = append(b, byte(receiverKind))
	if flags&visitHasReceiver != 0 {
		b = appendUID(b, receiver)
	}
	return b, nil
}

func appendUID(b []byte, u uid) []byte {
	b = binary.BigEndian.AppendUint64(b, u.hi)
	return binary.BigEndian.AppendUint64(b, u.lo)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeVisit reads a stored visit strictly: the version, every field,
// nothing after them, and then protocol.Validate. Strings are copied, so
// the result does not point into raw (bbolt's map).
func decodeVisit(raw []byte) (protocol.Visit, error) {
	var v protocol.Visit
	if len(raw) == 0 {
		return v, errors.New("empty value")
	}
	version := raw[0]
	var known uint64
	switch version {
	case visitV1:
		known = visitFlagsV1
	case visitV2:
		known = visitFlagsV2
	case visitV3:
		known = visitFlagsV3
	case visitV4:
		known = visitFlagsKnown
	default:
		return v, fmt.Errorf("value version 0x%02x; this build reads 0x%02x to 0x%02x", raw[0], visitV1, visitV4)
	}
	r := reader{b: raw[1:]}
	u := r.uid()
	v.ID = visitID(u)
	if s := r.byte(); int(s) < len(storedStatuses) {
		v.Status = string(storedStatuses[s])
	} else if r.err == nil {
		r.err = fmt.Errorf("status %d is not a visit status", s)
	}
	flags := r.uvarint()
	if flags&^known != 0 && r.err == nil {
		r.err = fmt.Errorf("unknown flags %#x", flags&^known)
	}
	for i, p := range [...]**time.Time{&v.ExpectedAt, &v.ExpectedUntil, &v.CheckedInAt, &v.CheckedOutAt} {
		if flags&(visitHasExpectedAt<<i) != 0 {
			t := time.UnixMicro(r.varint()).UTC()
			*p = &t
		}
	}
	v.Rules.Window.Before = r.int("window.before", passrule.MaxWindowMinutes)
	v.Rules.Window.After = r.int("window.after", passrule.MaxWindowMinutes)
	if flags&visitHasDaily != 0 {
		from := r.int("daily.from", int(passrule.MaxClock))
		until := r.int("daily.until", int(passrule.MaxClock))
		v.Rules.Daily = &protocol.Daily{From: passrule.Clock(from), Until: passrule.Clock(until)}
	}
	n := r.int("gate_ids", passrule.MaxGateIDs)
	v.Rules.GateIDs = make([]string, 0, n)
	for range n {
		v.Rules.GateIDs = append(v.Rules.GateIDs, r.string())
	}
	v.Uses = r.int("uses", 1<<31-1)
	v.ForVisitID = v.ID
	if flags&visitHasForVisit != 0 {
		v.ForVisitID = visitID(r.uid())
	}
	if flags&visitHasReentered != 0 {
		v.ReenteredAs = visitID(r.uid())
	}
	v.Rules.SingleUse = flags&visitSingleUse != 0
	v.Revoked = flags&visitRevoked != 0
	v.VisitorName = r.string()
	v.HostName = r.string()
	if version >= visitV2 {
		r.kiosk(&v, flags)
	}
	if version >= visitV3 {
		if flags&visitHasGate != 0 {
			v.GateID = formatUID(ids.Gate, r.uid())
		}
		v.AtDesk = flags&visitAtDesk != 0
	}
	if version >= visitV4 {
		if k := r.byte(); int(k) < len(storedReceivers) {
			v.Receiver = storedReceivers[k]
		} else if r.err == nil {
			r.err = fmt.Errorf("receiver %d is not a receiver", k)
		}
		if flags&visitHasReceiver != 0 {
			prefix := ids.Person
			if v.Receiver == protocol.ToTeam {
				prefix = ids.Team
			}
			v.ReceiverID = formatUID(prefix, r.uid())
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the value", len(r.b))
	}
	if r.err != nil {
		return protocol.Visit{}, r.err
	}
	return v, protocol.Validate(&v)
}

// kiosk reads the fields of visitV2 after host_name.
func (r *reader) kiosk(v *protocol.Visit, flags uint64) {
	v.Type = r.string()
	if i := r.byte(); int(i) < len(storedSources) {
		v.Source = storedSources[i]
	} else if r.err == nil {
		r.err = fmt.Errorf("source %d unknown", i)
	}
	if i := r.byte(); int(i) < len(storedAudiences) {
		v.Audience = storedAudiences[i]
	} else if r.err == nil {
		r.err = fmt.Errorf("audience %d unknown", i)
	}
	if flags&visitHasHostID != 0 {
		v.HostID = formatUID(ids.Person, r.uid())
	}
	if flags&visitHasTeam != 0 {
		v.TeamID = formatUID(ids.Team, r.uid())
		v.TeamName = r.string()
	}
	if flags&visitHasWaitingSince != 0 {
		t := time.UnixMicro(r.varint()).UTC()
		v.WaitingSince = &t
	}
	if flags&visitHasVisitorID != 0 {
		v.VisitorID = formatUID(ids.Visitor, r.uid())
	}
	v.NeedsSomeone = flags&visitNeedsSomeone != 0
	v.VisitorEmail = r.string()
	v.VisitorPhone = r.string()
	v.VisitorCompany = r.string()
}

// reader reads a value front to back; after the first error every read
// returns zero and err keeps that error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) uid() uid {
	b := r.take(16)
	if b == nil {
		return uid{}
	}
	return uid{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		if n < 0 {
			r.err = errors.New("a number overflows 64 bits")
		}
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		if n < 0 {
			r.err = errors.New("a number overflows 64 bits")
		}
		return 0
	}
	r.b = r.b[n:]
	return x
}

// int reads a uvarint that must be at most limit.
func (r *reader) int(field string, limit int) int {
	x := r.uvarint()
	if x > uint64(limit) && r.err == nil {
		r.err = fmt.Errorf("%s %d is more than %d", field, x, limit)
	}
	if r.err != nil {
		return 0
	}
	return int(x)
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) && r.err == nil {
		r.err = errShort
	}
	return string(r.take(int(n)))
}
