package cache

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// codecVisits returns visits that between them set every field of a
// visit, each to a value that differs from its zero, and the extremes the
// form must hold.
func codecVisits() map[string]protocol.Visit {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)
	until, in, out := at.Add(8*time.Hour), at.Add(time.Minute), at.Add(2*time.Hour)
	own := ids.New(ids.Visit)
	bare := protocol.Visit{ID: own, Status: string(passrule.Expected), ForVisitID: own, Rules: protocol.Rules{GateIDs: []string{}}}
	full := protocol.Visit{
		ID: ids.New(ids.Visit), Status: string(passrule.CheckedOut),
		ExpectedAt: &at, ExpectedUntil: &until, CheckedInAt: &in, CheckedOutAt: &out,
		Rules: protocol.Rules{Daily: &protocol.Daily{From: 22 * 60, Until: 6 * 60}, Window: protocol.Window{Before: passrule.MaxWindowMinutes, After: 15},
			SingleUse: true, GateIDs: []string{ids.New(ids.Gate), ids.New(ids.Gate)}},
		Uses: 3, Revoked: true, ForVisitID: ids.New(ids.Visit), ReenteredAs: ids.New(ids.Visit),
		VisitorName: "Vera Visitor – Ünïcode ✓", HostName: "Ada Lovelace",
		Type: "meeting", Source: "walk_in", Audience: "team", HostID: ids.New(ids.Person), TeamID: ids.New(ids.Team),
		TeamName: "Sales", NeedsSomeone: true, WaitingSince: &in, VisitorID: ids.New(ids.Visitor),
		VisitorEmail: "vera@example.com", VisitorPhone: "+447700900123", VisitorCompany: "Acme",
		GateID: ids.New(ids.Gate),
	}
	with := func(f func(v *protocol.Visit)) protocol.Visit {
		v := bare
		v.Rules.GateIDs = []string{}
		f(&v)
		return v
	}
	before1970 := time.Date(1969, 7, 20, 20, 17, 40, 1000, time.UTC)
	cases := map[string]protocol.Visit{
		"bare":                bare,
		"full":                full,
		"checked_in_at only":  with(func(v *protocol.Visit) { v.CheckedInAt = &in }),
		"expected_until only": with(func(v *protocol.Visit) { v.ExpectedUntil = &until }),
		"checked_out_at only": with(func(v *protocol.Visit) { v.CheckedOutAt = &out }),
		"time before 1970":    with(func(v *protocol.Visit) { v.ExpectedAt = &before1970 }),
		"daily from midnight": with(func(v *protocol.Visit) {
			v.Rules.Daily = &protocol.Daily{From: 0, Until: passrule.MaxClock}
		}),
		"most gates": with(func(v *protocol.Visit) {
			for range passrule.MaxGateIDs {
				v.Rules.GateIDs = append(v.Rules.GateIDs, ids.New(ids.Gate))
			}
		}),
		"most uses":       with(func(v *protocol.Visit) { v.Uses = math.MaxInt32 }),
		"revoked only":    with(func(v *protocol.Visit) { v.Revoked = true }),
		"single use only": with(func(v *protocol.Visit) { v.Rules.SingleUse = true }),
		"reentered only":  with(func(v *protocol.Visit) { v.ReenteredAs = ids.New(ids.Visit) }),
		"for another":     with(func(v *protocol.Visit) { v.ForVisitID = ids.New(ids.Visit) }),
		"names only":      with(func(v *protocol.Visit) { v.VisitorName, v.HostName = "V", "H" }),
		"desk visit waiting": with(func(v *protocol.Visit) {
			v.Source, v.Audience, v.NeedsSomeone, v.WaitingSince = "walk_in", "desk", true, &before1970
		}),
		"at the desk": with(func(v *protocol.Visit) {
			v.Status, v.CheckedInAt, v.AtDesk = string(passrule.CheckedIn), &in, true
		}),
		"gate only": with(func(v *protocol.Visit) { v.GateID = ids.New(ids.Gate) }),
		"handed over to a person": with(func(v *protocol.Visit) {
			v.Status, v.CheckedInAt, v.NeedsSomeone = string(passrule.CheckedIn), &in, true
			v.Receiver, v.ReceiverID = protocol.ToPerson, ids.New(ids.Person)
		}),
		"handed over to a team":    with(func(v *protocol.Visit) { v.Receiver, v.ReceiverID = protocol.ToTeam, ids.New(ids.Team) }),
		"handed over to reception": with(func(v *protocol.Visit) { v.Receiver = protocol.ToReception }),
		"long name":                with(func(v *protocol.Visit) { v.VisitorName = string(bytes.Repeat([]byte("n"), 200)) }),
	}
	for _, s := range storedStatuses {
		cases["status "+string(s)] = with(func(v *protocol.Visit) { v.Status = string(s) })
	}
	return cases
}

func TestEncodeVisit_RoundTrip(t *testing.T) {
	for name, v := range codecVisits() {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, protocol.Validate(&v))
			v = normalize(v)
			b, err := encodeVisit(&v)
			require.NoError(t, err)
			require.Equal(t, byte(visitV4), b[0])
			got, err := decodeVisit(b)
			require.NoError(t, err)
			require.Equal(t, v, got)
		})
	}
}

// TestEncodeVisit_EveryField checks the table above: changing any one
// field of the full visit changes its stored form, so no field is left
// out of it.
func TestEncodeVisit_EveryField(t *testing.T) {
	full := codecVisits()["full"]
	base, err := encodeVisit(&full)
	require.NoError(t, err)
	later := func(p *time.Time) *time.Time { t := p.Add(time.Microsecond); return &t }
	for name, f := range map[string]func(v *protocol.Visit){
		"id":             func(v *protocol.Visit) { v.ID = ids.New(ids.Visit) },
		"status":         func(v *protocol.Visit) { v.Status = string(passrule.CheckedIn) },
		"expected_at":    func(v *protocol.Visit) { v.ExpectedAt = later(v.ExpectedAt) },
		"expected_until": func(v *protocol.Visit) { v.ExpectedUntil = later(v.ExpectedUntil) },
		"checked_in_at":  func(v *protocol.Visit) { v.CheckedInAt = later(v.CheckedInAt) },
		"checked_out_at": func(v *protocol.Visit) { v.CheckedOutAt = later(v.CheckedOutAt) },
		"daily.from":     func(v *protocol.Visit) { v.Rules.Daily = &protocol.Daily{From: 21 * 60, Until: v.Rules.Daily.Until} },
		"daily.until":    func(v *protocol.Visit) { v.Rules.Daily = &protocol.Daily{From: v.Rules.Daily.From, Until: 5 * 60} },
		"window.before":  func(v *protocol.Visit) { v.Rules.Window.Before-- },
		"window.after":   func(v *protocol.Visit) { v.Rules.Window.After++ },
		"single_use":     func(v *protocol.Visit) { v.Rules.SingleUse = false },
		"gate_ids":       func(v *protocol.Visit) { v.Rules.GateIDs = v.Rules.GateIDs[:1] },
		"uses":           func(v *protocol.Visit) { v.Uses++ },
		"revoked":        func(v *protocol.Visit) { v.Revoked = false },
		"for_visit_id":   func(v *protocol.Visit) { v.ForVisitID = ids.New(ids.Visit) },
		"reentered_as":   func(v *protocol.Visit) { v.ReenteredAs = ids.New(ids.Visit) },
		"visitor_name":   func(v *protocol.Visit) { v.VisitorName += "!" },
		"host_name":      func(v *protocol.Visit) { v.HostName += "!" },
		"gate_id":        func(v *protocol.Visit) { v.GateID = ids.New(ids.Gate) },
		"no gate_id":     func(v *protocol.Visit) { v.GateID = "" },
		"at_desk":        func(v *protocol.Visit) { v.GateID, v.AtDesk = "", true },
	} {
		v := full
		v.Rules.GateIDs = append([]string(nil), full.Rules.GateIDs...)
		f(&v)
		b, err := encodeVisit(&v)
		require.NoError(t, err, name)
		require.NotEqual(t, base, b, "%s is not in the stored form", name)
		got, err := decodeVisit(b)
		require.NoError(t, err, name)
		require.Equal(t, v, got, name)
	}
}

func TestDecodeVisit_Refuses(t *testing.T) {
	v := codecVisits()["full"]
	good, err := encodeVisit(&v)
	require.NoError(t, err)
	bare := codecVisits()["bare"]
	goodBare, err := encodeVisit(&bare)
	require.NoError(t, err)
	edit := func(b []byte, f func(b []byte) []byte) []byte { return f(bytes.Clone(b)) }
	flagsAt := 1 + 16 + 1 // version, id, status
	invalid := v
	invalid.ExpectedUntil = invalid.ExpectedAt // not after it
	goodInvalid, err := encodeVisit(&invalid)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		raw  []byte
		want string
	}{
		"empty":           {nil, "empty value"},
		"json":            {[]byte(`{"id":"x"}`), "version 0x7b"},
		"unknown version": {edit(good, func(b []byte) []byte { b[0] = 5; return b }), "version 0x05"},
		"a v1 value with a v2 flag": {edit(goodBare, func(b []byte) []byte {
			b[0] = visitV1
			return append(append(b[:flagsAt:flagsAt], binary.AppendUvarint(nil, visitNeedsSomeone)...), b[flagsAt+1:]...)
		}), "unknown flags"},
		"a v2 value with a v3 flag": {edit(goodBare, func(b []byte) []byte {
			b[0] = visitV2
			return append(append(b[:flagsAt:flagsAt], binary.AppendUvarint(nil, visitAtDesk)...), b[flagsAt+1:]...)
		}), "unknown flags"},
		"short":            {good[:len(good)-1], "ends early"},
		"only the version": {good[:1], "ends early"},
		"trailing byte":    {append(bytes.Clone(good), 0), "1 bytes after the value"},
		"unknown status":   {edit(good, func(b []byte) []byte { b[17] = byte(len(storedStatuses)); return b }), "status 7"},
		"unknown flag": {edit(goodBare, func(b []byte) []byte {
			return append(append(b[:flagsAt:flagsAt], binary.AppendUvarint(nil, visitFlagsKnown+1)...), b[flagsAt+1:]...)
		}), "unknown flags"},
		"name longer than the value": {edit(goodBare, func(b []byte) []byte { b[len(b)-2] = 5; return b }), "ends early"},
		"window out of range": {edit(goodBare, func(b []byte) []byte {
			// bare: version, id, status, flags 0, before 0, after 0, …
			return append(append(b[:flagsAt+1:flagsAt+1], binary.AppendUvarint(nil, passrule.MaxWindowMinutes+1)...), b[flagsAt+2:]...)
		}), "window.before"},
		"invalid once decoded": {goodInvalid, "expected_until is not after expected_at"},
	} {
		_, err := decodeVisit(tc.raw)
		require.ErrorContains(t, err, tc.want, name)
	}
}

// A value of visitV1, written by builds before the kiosk's fields, reads
// as the same visit with none of them.
func TestDecodeVisit_V1(t *testing.T) {
	for name, v := range codecVisits() {
		if v.Type != "" || v.Source != "" || v.GateID != "" || v.AtDesk || v.Receiver != "" {
			continue
		}
		b, err := encodeVisit(&v)
		require.NoError(t, err)
		// v4 with no gate, no receiver and no kiosk field ends with type "",
		// source 0, audience 0, three empty strings and receiver 0: v1 is
		// the same without them.
		require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0}, b[len(b)-7:], name)
		v1 := append([]byte{visitV1}, b[1:len(b)-7]...)
		got, err := decodeVisit(v1)
		require.NoError(t, err, name)
		require.Equal(t, v, got, name)
	}
}

// A value of visitV2, written by builds before gate_id and at_desk, reads
// as the same visit with neither: a visit checked in then reads as
// checked in through a gate, and an entry gate refuses it already_in as
// those builds did.
func TestDecodeVisit_V2(t *testing.T) {
	n := 0
	for name, v := range codecVisits() {
		if v.GateID != "" || v.AtDesk || v.Receiver != "" {
			continue
		}
		b, err := encodeVisit(&v)
		require.NoError(t, err)
		// v4 without gate_id, at_desk or a receiver is v2 with another
		// version byte and a last byte of 0 (no receiver).
		v2 := append([]byte{visitV2}, b[1:len(b)-1]...)
		got, err := decodeVisit(v2)
		require.NoError(t, err, name)
		require.Equal(t, v, got, name)
		n++
	}
	require.Greater(t, n, 10)

	// A visit written by a build before at_desk, checked in at the desk:
	// the same bytes as v3 gives them, and it reads as not at the desk.
	desk := codecVisits()["at the desk"]
	b, err := encodeVisit(&desk)
	require.NoError(t, err)
	flagsAt := 1 + 16 + 1
	flags, n2 := binary.Uvarint(b[flagsAt:])
	require.NotZero(t, flags&visitAtDesk)
	v2 := append(append([]byte{visitV2}, b[1:flagsAt]...), binary.AppendUvarint(nil, flags&^visitAtDesk)...)
	v2 = append(v2, b[flagsAt+n2:len(b)-1]...) // without v4's receiver byte
	got, err := decodeVisit(v2)
	require.NoError(t, err)
	require.False(t, got.AtDesk)
	desk.AtDesk = false
	require.Equal(t, desk, got)
}

// A value of visitV3, written by builds before the receiver, reads as the
// same visit with none.
func TestDecodeVisit_V3(t *testing.T) {
	n := 0
	for name, v := range codecVisits() {
		if v.Receiver != "" {
			continue
		}
		b, err := encodeVisit(&v)
		require.NoError(t, err)
		require.Equal(t, byte(0), b[len(b)-1], name)
		got, err := decodeVisit(append([]byte{visitV3}, b[1:len(b)-1]...))
		require.NoError(t, err, name)
		require.Equal(t, v, got, name)
		n++
	}
	require.Greater(t, n, 10)
	// visitV3 knows no receiver flag.
	person := codecVisits()["handed over to a person"]
	b, err := encodeVisit(&person)
	require.NoError(t, err)
	_, err = decodeVisit(append([]byte{visitV3}, b[1:]...))
	require.Error(t, err)
}

// FuzzDecodeVisit: no input panics, and whatever decodes encodes to a
// value that decodes to the same visit.
func FuzzDecodeVisit(f *testing.F) {
	for _, v := range codecVisits() {
		b, err := encodeVisit(&v)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := decodeVisit(raw)
		if err != nil {
			return
		}
		b, err := encodeVisit(&v)
		require.NoError(t, err)
		again, err := decodeVisit(b)
		require.NoError(t, err)
		require.Equal(t, v, again)
	})
}
