package passtoken_test

import (
	"bytes"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.jetify.com/typeid"

	"github.com/svc-vms/svc/shared/passtoken"
)

// newKey returns a key made deterministically from seed, so failures repeat.
func newKey(tb testing.TB, seed byte) passtoken.Key {
	tb.Helper()
	k, err := passtoken.NewKey(bytes.NewReader(bytes.Repeat([]byte{seed}, 36)))
	if err != nil {
		tb.Fatalf("NewKey: %v", err)
	}
	return k
}

func keySet(tb testing.TB, keys ...passtoken.Key) passtoken.KeySet {
	tb.Helper()
	pubs := make([]passtoken.PublicKey, len(keys))
	for i, k := range keys {
		pubs[i] = k.Public()
	}
	set, err := passtoken.NewKeySet(pubs...)
	if err != nil {
		tb.Fatalf("NewKeySet: %v", err)
	}
	return set
}

// id returns the TypeID with prefix whose UUID is 16 bytes of b, made by the
// reference implementation rather than the package under test.
func id(tb testing.TB, prefix string, b byte) string {
	tb.Helper()
	return idFromUUID(tb, prefix, bytes.Repeat([]byte{b}, 16))
}

func idFromUUID(tb testing.TB, prefix string, uuid []byte) string {
	tb.Helper()
	tid, err := typeid.FromUUIDBytesWithPrefix(prefix, uuid)
	if err != nil {
		tb.Fatalf("typeid: %v", err)
	}
	return tid.String()
}

// randomID returns a fresh UUIDv7 TypeID from the reference implementation.
func randomID(tb testing.TB, prefix string) string {
	tb.Helper()
	tid, err := typeid.WithPrefix(prefix)
	if err != nil {
		tb.Fatalf("typeid: %v", err)
	}
	return tid.String()
}

func gates(tb testing.TB, n int) []string {
	tb.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = id(tb, "gate", byte(0x40+i))
	}
	return out
}

var (
	t0 = time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC)
	t1 = time.Date(2026, 3, 11, 18, 0, 0, 0, time.UTC)
)

// worstClaims sets every field, with MaxGates gates and the largest values.
func worstClaims(tb testing.TB) passtoken.Claims {
	tb.Helper()
	return passtoken.Claims{
		VisitID:   id(tb, "visit", 0xFF),
		SiteID:    id(tb, "site", 0xFF),
		GateIDs:   gates(tb, passtoken.MaxGates),
		NotBefore: time.Unix(math.MaxUint32-1, 0).UTC(),
		NotAfter:  time.Unix(math.MaxUint32, 0).UTC(),
		Daily:     &passtoken.Daily{From: 1439, Until: 1438},
		SingleUse: true,
		IssuedAt:  time.Unix(math.MaxUint32, 0).UTC(),
	}
}

func baseClaims(tb testing.TB) passtoken.Claims {
	tb.Helper()
	return passtoken.Claims{
		VisitID:   id(tb, "visit", 0x01),
		SiteID:    id(tb, "site", 0x02),
		GateIDs:   gates(tb, 2),
		NotBefore: t0,
		NotAfter:  t1,
		Daily:     &passtoken.Daily{From: 8 * 60, Until: 18 * 60},
		IssuedAt:  t0.Add(-time.Hour),
	}
}

// diffClaims describes how got differs from want; times must be equal
// instants and, when set, in UTC.
func diffClaims(got, want passtoken.Claims) string {
	var d []string
	if got.VisitID != want.VisitID {
		d = append(d, "VisitID "+got.VisitID+" want "+want.VisitID)
	}
	if got.SiteID != want.SiteID {
		d = append(d, "SiteID "+got.SiteID+" want "+want.SiteID)
	}
	if strings.Join(got.GateIDs, ",") != strings.Join(want.GateIDs, ",") || (got.GateIDs == nil) != (len(want.GateIDs) == 0) {
		d = append(d, "GateIDs ["+strings.Join(got.GateIDs, ",")+"] want ["+strings.Join(want.GateIDs, ",")+"]")
	}
	for _, f := range []struct {
		name      string
		got, want time.Time
	}{{"NotBefore", got.NotBefore, want.NotBefore}, {"NotAfter", got.NotAfter, want.NotAfter}, {"IssuedAt", got.IssuedAt, want.IssuedAt}} {
		if !f.got.Equal(f.want) || f.got.IsZero() != f.want.IsZero() || (!f.got.IsZero() && f.got.Location() != time.UTC) {
			d = append(d, f.name+" "+f.got.String()+" want "+f.want.String())
		}
	}
	switch {
	case (got.Daily == nil) != (want.Daily == nil):
		d = append(d, "Daily set differs")
	case got.Daily != nil && *got.Daily != *want.Daily:
		d = append(d, "Daily differs")
	}
	if got.SingleUse != want.SingleUse {
		d = append(d, "SingleUse differs")
	}
	return strings.Join(d, "; ")
}

func signT(tb testing.TB, k passtoken.Key, c passtoken.Claims) string {
	tb.Helper()
	return passKind.mustSign(tb, k, c)
}

func TestSignVerify_RoundTrip(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	frac := time.Date(2026, 3, 9, 10, 0, 0, 999_999_999, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   passtoken.Claims
		want *passtoken.Claims // nil: same as in
	}{
		{"walk-in, no gates, zero times", passtoken.Claims{
			VisitID: id(t, "visit", 3), SiteID: id(t, "site", 4), IssuedAt: t0,
		}, nil},
		{"one gate, window, office hours", passtoken.Claims{
			VisitID: id(t, "visit", 3), SiteID: id(t, "site", 4), GateIDs: gates(t, 1),
			NotBefore: t0, NotAfter: t1, Daily: &passtoken.Daily{From: 540, Until: 1020}, IssuedAt: t0,
		}, nil},
		{"max gates, daily spanning midnight, single use", passtoken.Claims{
			VisitID: id(t, "visit", 5), SiteID: id(t, "site", 6), GateIDs: gates(t, passtoken.MaxGates),
			NotBefore: t0, NotAfter: t1, Daily: &passtoken.Daily{From: 22 * 60, Until: 6 * 60}, SingleUse: true, IssuedAt: t0,
		}, nil},
		{"only an upper bound", passtoken.Claims{
			VisitID: id(t, "visit", 7), SiteID: id(t, "site", 8), NotAfter: t1, IssuedAt: t0,
		}, nil},
		{"only a lower bound", passtoken.Claims{
			VisitID: id(t, "visit", 7), SiteID: id(t, "site", 8), NotBefore: t0, IssuedAt: t0,
		}, nil},
		{"instant window, extreme daily", passtoken.Claims{
			VisitID: id(t, "visit", 0), SiteID: id(t, "site", 0), NotBefore: t1, NotAfter: t1,
			Daily: &passtoken.Daily{From: 0, Until: 1439}, IssuedAt: time.Unix(1, 0),
		}, nil},
		{"worst case", worstClaims(t), nil},
		{"gate order kept", passtoken.Claims{
			VisitID: id(t, "visit", 9), SiteID: id(t, "site", 9), GateIDs: []string{id(t, "gate", 0xEE), id(t, "gate", 0x11)}, IssuedAt: t0,
		}, nil},
		{"fractions dropped, UTC returned", passtoken.Claims{
			VisitID: id(t, "visit", 9), SiteID: id(t, "site", 9), NotBefore: frac, NotAfter: frac.Add(time.Hour), IssuedAt: frac,
		}, &passtoken.Claims{
			VisitID: id(t, "visit", 9), SiteID: id(t, "site", 9), NotBefore: frac.Truncate(time.Second),
			NotAfter: frac.Add(time.Hour).Truncate(time.Second), IssuedAt: frac.Truncate(time.Second),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signT(t, k, tt.in)
			got, err := passtoken.Verify(tok, keys)
			if err != nil {
				t.Fatalf("Verify(%q): %v", tok, err)
			}
			want := tt.in
			if tt.want != nil {
				want = *tt.want
			}
			if d := diffClaims(got, want); d != "" {
				t.Errorf("claims differ: %s", d)
			}
			if again := signT(t, k, got); again != tok {
				t.Errorf("re-signing the verified claims gave another token:\n%s\n%s", again, tok)
			}
		})
	}
}

// TestSignVerify_RandomIDs checks the package's TypeID codec against the
// reference implementation on fresh UUIDv7 IDs and the extreme UUIDs.
func TestSignVerify_RandomIDs(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	for i := range 200 {
		c := passtoken.Claims{VisitID: randomID(t, "visit"), SiteID: randomID(t, "site"), IssuedAt: t0}
		for range i % (passtoken.MaxGates + 1) {
			c.GateIDs = append(c.GateIDs, randomID(t, "gate"))
		}
		switch i {
		case 0:
			c.VisitID = idFromUUID(t, "visit", make([]byte, 16))
		case 1:
			c.VisitID = id(t, "visit", 0xFF)
		}
		got, err := passtoken.Verify(signT(t, k, c), keys)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if d := diffClaims(got, c); d != "" {
			t.Fatalf("claims differ: %s", d)
		}
	}
}

// rawPayload writes the payload layout that doc.go documents, independently
// of the package, so tests can check the format and forge signed tokens
// that break one rule.
type rawPayload struct {
	keyID                [4]byte
	visit, site          [16]byte
	issued, nbf, naf     uint32
	dailyFrom, dailyTill uint16
	flags, nGates        byte
	gates                [][16]byte
}

func (r rawPayload) bytes() []byte {
	b := append([]byte{}, r.keyID[:]...)
	b = append(b, r.visit[:]...)
	b = append(b, r.site[:]...)
	b = binary.BigEndian.AppendUint32(b, r.issued)
	b = binary.BigEndian.AppendUint32(b, r.nbf)
	b = binary.BigEndian.AppendUint32(b, r.naf)
	b = binary.BigEndian.AppendUint16(b, r.dailyFrom)
	b = binary.BigEndian.AppendUint16(b, r.dailyTill)
	b = append(b, r.flags, r.nGates)
	for _, g := range r.gates {
		b = append(b, g[:]...)
	}
	return b
}

func uuidOf(tb testing.TB, s string) [16]byte {
	tb.Helper()
	tid, err := typeid.FromString(s)
	if err != nil {
		tb.Fatalf("typeid: %v", err)
	}
	return [16]byte(tid.UUIDBytes())
}

func rawOf(tb testing.TB, k passtoken.Key, c passtoken.Claims) rawPayload {
	tb.Helper()
	r := rawPayload{
		visit: uuidOf(tb, c.VisitID), site: uuidOf(tb, c.SiteID), issued: uint32(c.IssuedAt.Unix()),
		dailyFrom: 0xFFFF, dailyTill: 0xFFFF, nGates: byte(len(c.GateIDs)),
	}
	copy(r.keyID[:], mustHex(tb, k.ID))
	if !c.NotBefore.IsZero() {
		r.nbf = uint32(c.NotBefore.Unix())
	}
	if !c.NotAfter.IsZero() {
		r.naf = uint32(c.NotAfter.Unix())
	}
	if c.Daily != nil {
		r.dailyFrom, r.dailyTill = uint16(c.Daily.From), uint16(c.Daily.Until)
	}
	if c.SingleUse {
		r.flags = 1
	}
	for _, g := range c.GateIDs {
		r.gates = append(r.gates, uuidOf(tb, g))
	}
	return r
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	var b []byte
	for i := 0; i+1 < len(s); i += 2 {
		var v byte
		for _, c := range s[i : i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			default:
				tb.Fatalf("key ID %q is not lower-case hex", s)
			}
		}
		b = append(b, v)
	}
	return b
}

var stdB32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// forge signs prefix‖payload with k the way doc.go describes and appends
// extra after the signature.
func forge(k passtoken.Key, payload, extra []byte) string {
	return forgeAs(k, passtoken.Prefix, passtoken.Prefix, payload, extra)
}

func TestSign_Layout(t *testing.T) {
	k := newKey(t, 1)
	for _, c := range []passtoken.Claims{baseClaims(t), worstClaims(t), {VisitID: id(t, "visit", 1), SiteID: id(t, "site", 2), IssuedAt: t0}} {
		tok := signT(t, k, c)
		if forged := forge(k, rawOf(t, k, c).bytes(), nil); forged != tok {
			t.Errorf("Sign does not follow the documented layout:\n got %s\nwant %s", tok, forged)
		}
	}
}

// TestSign_Golden pins the format: a change here breaks every pass already
// printed or sent, and needs a new Prefix.
func TestSign_Golden(t *testing.T) {
	k := newKey(t, 7)
	if k.ID != "07070707" {
		t.Fatalf("key ID = %q, want the first 4 bytes of the reader as hex", k.ID)
	}
	passKind.checkGolden(t, k, baseClaims(t), "P1:"+golden)
}

const golden = "A4DQOBYBAEAQCAIBAEAQCAIBAEAQCAIBAIBAEAQCAIBAEAQCAIBAEAQCAJU245XYNGXIKCDJWGW2AAPAAQ4AAASAIBAEAQCAIBAEAQCAIBAEAQCAIFAUCQKBIFAUCQKBIFAUCQKBIERZM7VSIMUZNUAGH3R7OW3PKJCYN7BF6TIODA4BVSM7KO4GFZ6B577B54BXCLNUBM6FHKOCI26UEDVLEZD4YNGDBJIIVNIDW7NZPJYI"

func TestVerify_TamperEveryCharacter(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	one := baseClaims(t)
	one.GateIDs = one.GateIDs[:1]
	// 2 gates leave no unused bits in the last character, 1 and 4 do.
	for _, c := range []passtoken.Claims{baseClaims(t), one, worstClaims(t)} {
		passKind.checkTamperEveryCharacter(t, keys, signT(t, k, c))
	}
}

func isVerifyError(err error) bool {
	return errors.Is(err, passtoken.ErrMalformed) || errors.Is(err, passtoken.ErrUnknownKey) || errors.Is(err, passtoken.ErrBadSignature)
}

func TestVerify_WrongKey(t *testing.T) {
	passKind.checkWrongKey(t, newKey(t, 1), newKey(t, 2), baseClaims(t))
}

func TestVerify_UnknownKey(t *testing.T) {
	passKind.checkUnknownKey(t, newKey(t, 0xAB), newKey(t, 2), baseClaims(t))
}

func TestVerify_Rotation(t *testing.T) {
	old, cur := newKey(t, 1), newKey(t, 2)
	oldTok, curTok := signT(t, old, baseClaims(t)), signT(t, cur, baseClaims(t))

	both := keySet(t, cur, old)
	for name, tok := range map[string]string{"old": oldTok, "current": curTok} {
		if _, err := passtoken.Verify(tok, both); err != nil {
			t.Errorf("%s key's token while both are honoured: %v", name, err)
		}
	}

	delete(both, old.ID)
	if _, err := passtoken.Verify(oldTok, both); !errors.Is(err, passtoken.ErrUnknownKey) {
		t.Errorf("old key's token after retirement: err = %v, want ErrUnknownKey", err)
	}
	if _, err := passtoken.Verify(curTok, both); err != nil {
		t.Errorf("current key's token after retirement of the old: %v", err)
	}
}

func TestSign_RejectsInvalidClaims(t *testing.T) {
	k := newKey(t, 1)
	if _, err := passtoken.Sign(k, baseClaims(t)); err != nil {
		t.Fatalf("base claims: %v", err)
	}
	valid := id(t, "visit", 1)
	tests := []struct {
		name   string
		change func(*passtoken.Claims)
	}{
		{"visit ID with site prefix", func(c *passtoken.Claims) { c.VisitID = id(t, "site", 1) }},
		{"visit ID empty", func(c *passtoken.Claims) { c.VisitID = "" }},
		{"visit ID upper case", func(c *passtoken.Claims) { c.VisitID = "visit_" + strings.ToUpper(valid[6:]) }},
		{"visit ID first character 8", func(c *passtoken.Claims) { c.VisitID = "visit_8" + valid[7:] }},
		{"visit ID with u", func(c *passtoken.Claims) { c.VisitID = valid[:len(valid)-1] + "u" }},
		{"visit ID short", func(c *passtoken.Claims) { c.VisitID = valid[:len(valid)-1] }},
		{"visit ID long", func(c *passtoken.Claims) { c.VisitID = valid + "0" }},
		{"site ID with visit prefix", func(c *passtoken.Claims) { c.SiteID = valid }},
		{"gate ID with site prefix", func(c *passtoken.Claims) { c.GateIDs = []string{id(t, "site", 1)} }},
		{"gate ID empty", func(c *passtoken.Claims) { c.GateIDs = []string{""} }},
		{"too many gates", func(c *passtoken.Claims) { c.GateIDs = gates(t, passtoken.MaxGates+1) }},
		{"gate twice", func(c *passtoken.Claims) { c.GateIDs = []string{id(t, "gate", 1), id(t, "gate", 2), id(t, "gate", 1)} }},
		{"zero issued at", func(c *passtoken.Claims) { c.IssuedAt = time.Time{} }},
		{"issued at the epoch", func(c *passtoken.Claims) { c.IssuedAt = time.Unix(0, 0) }},
		{"not before before 1970", func(c *passtoken.Claims) { c.NotBefore = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"not before at the epoch", func(c *passtoken.Claims) { c.NotBefore = time.Unix(0, 0) }},
		{"not after before 1970, no lower bound", func(c *passtoken.Claims) {
			c.NotBefore, c.NotAfter = time.Time{}, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)
		}},
		{"not after past 2106", func(c *passtoken.Claims) { c.NotAfter = time.Unix(math.MaxUint32+1, 0) }},
		{"not before after not after", func(c *passtoken.Claims) { c.NotBefore = c.NotAfter.Add(time.Second) }},
		{"daily from negative", func(c *passtoken.Claims) { c.Daily = &passtoken.Daily{From: -1, Until: 60} }},
		{"daily until 1440", func(c *passtoken.Claims) { c.Daily = &passtoken.Daily{From: 0, Until: 1440} }},
		{"daily from 65535", func(c *passtoken.Claims) { c.Daily = &passtoken.Daily{From: 0xFFFF, Until: 60} }},
		{"daily from equals until", func(c *passtoken.Claims) { c.Daily = &passtoken.Daily{From: 600, Until: 600} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := baseClaims(t)
			tt.change(&c)
			tok, err := passtoken.Sign(k, c)
			if !errors.Is(err, passtoken.ErrInvalidClaims) {
				t.Fatalf("Sign = %q, %v; want ErrInvalidClaims", tok, err)
			}
		})
	}
}

func TestSign_RejectsInvalidKey(t *testing.T) {
	k := newKey(t, 1)
	for name, bad := range map[string]passtoken.Key{
		"upper-case ID":     {ID: "ABABABAB", Private: newKey(t, 0xAB).Private},
		"short ID":          {ID: k.ID[:7], Private: k.Private},
		"ID not hex":        {ID: "0707070g", Private: k.Private},
		"no private key":    {ID: k.ID},
		"short private key": {ID: k.ID, Private: k.Private[:32]},
	} {
		if tok, err := passtoken.Sign(bad, baseClaims(t)); !errors.Is(err, passtoken.ErrInvalidKey) {
			t.Errorf("%s: Sign = %q, %v; want ErrInvalidKey", name, tok, err)
		}
	}
}

func TestNewKeySet_RejectsInvalidKeys(t *testing.T) {
	a, b := newKey(t, 1), newKey(t, 2)
	if _, err := passtoken.NewKeySet(a.Public(), b.Public(), a.Public()); err != nil {
		t.Fatalf("valid keys, one repeated: %v", err)
	}
	for name, keys := range map[string][]passtoken.PublicKey{
		"bad ID":        {{ID: "KEY1", Key: a.Public().Key}},
		"short key":     {{ID: a.ID, Key: a.Public().Key[:16]}},
		"ID reused":     {a.Public(), {ID: a.ID, Key: b.Public().Key}},
		"upper-case ID": {{ID: "ABCDEF01", Key: a.Public().Key}},
	} {
		if _, err := passtoken.NewKeySet(keys...); !errors.Is(err, passtoken.ErrInvalidKey) {
			t.Errorf("%s: err = %v, want ErrInvalidKey", name, err)
		}
	}
}

func TestNewKey_Random(t *testing.T) {
	a, err := passtoken.NewKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := passtoken.NewKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Private.Equal(b.Private) {
		t.Errorf("two keys from crypto/rand are equal: %s %s", a.ID, b.ID)
	}
	if len(a.ID) != 8 || strings.Trim(a.ID, "0123456789abcdef") != "" {
		t.Errorf("ID %q is not 8 lower-case hex digits", a.ID)
	}
	if _, err := passtoken.NewKey(bytes.NewReader(make([]byte, 35))); err == nil {
		t.Error("NewKey with 35 bytes of randomness succeeded")
	}
}

// TestVerify_RejectsNonCanonical feeds texts and correctly signed payloads
// that break one rule of the format each: all must be ErrMalformed, not just
// any error, so the strictness is what rejects them.
func TestVerify_RejectsNonCanonical(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	c := baseClaims(t)
	tok := signT(t, k, c)
	good := rawOf(t, k, c)
	if forged := forge(k, good.bytes(), nil); forged != tok {
		t.Fatalf("forge does not reproduce Sign:\n%s\n%s", forged, tok)
	}

	// A one-gate token has 3 unused bits in its last character; set one.
	one := c
	one.GateIDs = one.GateIDs[:1]
	trailing := passKind.withTrailingBit(t, signT(t, k, one))

	mutate := func(f func(*rawPayload)) []byte {
		r := good
		r.gates = append([][16]byte{}, good.gates...)
		f(&r)
		return r.bytes()
	}
	texts := passKind.malformedTexts(tok)
	for name, s := range map[string]string{
		"inner newline":         tok[:40] + "\n" + tok[40:],
		"trailing bits":         trailing,
		"longer than MaxLen":    passtoken.Prefix + strings.Repeat("A", passtoken.MaxLen),
		"a byte after the sig":  forge(k, good.bytes(), []byte{0}),
		"a byte before the sig": forge(k, append(good.bytes(), 0), nil),
		"gate count too high":   forge(k, mutate(func(r *rawPayload) { r.nGates = 3 }), nil),
		"gate count too low":    forge(k, mutate(func(r *rawPayload) { r.nGates = 1 }), nil),
		"gate count 255":        forge(k, mutate(func(r *rawPayload) { r.nGates = 255 }), nil),
		"too many gates": forge(k, mutate(func(r *rawPayload) {
			r.gates = make([][16]byte, passtoken.MaxGates+1)
			for i := range r.gates {
				r.gates[i][0] = byte(i)
			}
			r.nGates = byte(len(r.gates))
		}), nil),
		"gate twice":             forge(k, mutate(func(r *rawPayload) { r.gates[1] = r.gates[0] }), nil),
		"reserved flag":          forge(k, mutate(func(r *rawPayload) { r.flags |= 0x80 }), nil),
		"issued at 0":            forge(k, mutate(func(r *rawPayload) { r.issued = 0 }), nil),
		"not before > not after": forge(k, mutate(func(r *rawPayload) { r.nbf = r.naf + 1 }), nil),
		"daily from 1440":        forge(k, mutate(func(r *rawPayload) { r.dailyFrom = 1440 }), nil),
		"daily until 0xFFFE":     forge(k, mutate(func(r *rawPayload) { r.dailyTill = 0xFFFE }), nil),
		"daily half unset":       forge(k, mutate(func(r *rawPayload) { r.dailyTill = 0xFFFF }), nil),
		"daily from = until":     forge(k, mutate(func(r *rawPayload) { r.dailyTill = r.dailyFrom }), nil),
		"payload cut short":      forge(k, good.bytes()[:53], nil),
	} {
		texts[name] = s
	}
	passKind.checkMalformed(t, keys, texts)
}

func TestMaxLen(t *testing.T) {
	k := newKey(t, 1)
	if got := len(signT(t, k, worstClaims(t))); got != passtoken.MaxLen {
		t.Errorf("worst-case token has %d characters, MaxLen is %d", got, passtoken.MaxLen)
	}
}

func BenchmarkSign(b *testing.B) {
	passKind.benchSign(b, newKey(b, 1), baseClaims(b))
}

func BenchmarkVerify(b *testing.B) {
	passKind.benchVerify(b, newKey(b, 1), baseClaims(b))
}

func BenchmarkVerify_Malformed(b *testing.B) {
	keys := keySet(b, newKey(b, 1))
	tok := signT(b, newKey(b, 1), baseClaims(b))
	bad := tok[:len(tok)-1] + "8"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := passtoken.Verify(bad, keys); err == nil {
			b.Fatal("verified")
		}
	}
}
