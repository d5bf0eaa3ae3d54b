package passtoken_test

import (
	"encoding/binary"
	"errors"
	"github.com/svc-vms/svc/shared/zbartest"
	"math"
	"strings"
	"testing"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/shared/passtoken"
)

func basePerson(tb testing.TB) passtoken.PersonClaims {
	tb.Helper()
	return passtoken.PersonClaims{PersonID: id(tb, "person", 0x21), IssuedAt: t0}
}

func signPersonT(tb testing.TB, k passtoken.Key, c passtoken.PersonClaims) string {
	tb.Helper()
	return personKind.mustSign(tb, k, c)
}

// rawPerson writes the personal payload doc.go documents, independently of
// the package.
func rawPerson(tb testing.TB, k passtoken.Key, c passtoken.PersonClaims) []byte {
	tb.Helper()
	b := append([]byte{}, mustHex(tb, k.ID)...)
	u := uuidOf(tb, c.PersonID)
	b = append(b, u[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(c.IssuedAt.Unix()))
}

// forgePerson signs "E1:"‖payload with k and appends extra after the
// signature.
func forgePerson(k passtoken.Key, payload, extra []byte) string {
	return forgeAs(k, passtoken.PersonPrefix, passtoken.PersonPrefix, payload, extra)
}

func diffPerson(got, want passtoken.PersonClaims) string {
	var d []string
	if got.PersonID != want.PersonID {
		d = append(d, "PersonID "+got.PersonID+" want "+want.PersonID)
	}
	if !got.IssuedAt.Equal(want.IssuedAt) || got.IssuedAt.Location() != time.UTC {
		d = append(d, "IssuedAt "+got.IssuedAt.String()+" want "+want.IssuedAt.String())
	}
	return strings.Join(d, "; ")
}

func TestSignVerifyPerson_RoundTrip(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	frac := time.Date(2026, 3, 9, 10, 0, 0, 999_999_999, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   passtoken.PersonClaims
		want passtoken.PersonClaims
	}{
		{"plain", basePerson(t), basePerson(t)},
		{"fraction dropped, UTC returned",
			passtoken.PersonClaims{PersonID: id(t, "person", 2), IssuedAt: frac},
			passtoken.PersonClaims{PersonID: id(t, "person", 2), IssuedAt: frac.Truncate(time.Second)}},
		{"earliest", passtoken.PersonClaims{PersonID: idFromUUID(t, "person", make([]byte, 16)), IssuedAt: time.Unix(1, 0)},
			passtoken.PersonClaims{PersonID: idFromUUID(t, "person", make([]byte, 16)), IssuedAt: time.Unix(1, 0)}},
		{"latest", passtoken.PersonClaims{PersonID: id(t, "person", 0xFF), IssuedAt: time.Unix(math.MaxUint32, 0)},
			passtoken.PersonClaims{PersonID: id(t, "person", 0xFF), IssuedAt: time.Unix(math.MaxUint32, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signPersonT(t, k, tt.in)
			if len(tok) != passtoken.PersonLen {
				t.Errorf("token has %d characters, PersonLen is %d", len(tok), passtoken.PersonLen)
			}
			got, err := passtoken.VerifyPerson(tok, keys)
			if err != nil {
				t.Fatalf("VerifyPerson(%q): %v", tok, err)
			}
			if d := diffPerson(got, tt.want); d != "" {
				t.Errorf("claims differ: %s", d)
			}
			if again := signPersonT(t, k, got); again != tok {
				t.Errorf("re-signing the verified claims gave another token:\n%s\n%s", again, tok)
			}
		})
	}
	for range 200 {
		c := passtoken.PersonClaims{PersonID: randomID(t, "person"), IssuedAt: t0}
		got, err := passtoken.VerifyPerson(signPersonT(t, k, c), keys)
		if err != nil {
			t.Fatalf("VerifyPerson: %v", err)
		}
		if d := diffPerson(got, c); d != "" {
			t.Fatalf("claims differ: %s", d)
		}
	}
}

// TestSignPerson_Deterministic: the cloud shows a person's pass again by
// signing it again, so the same claims must give the same token, and a new
// issue time another.
func TestSignPerson_Deterministic(t *testing.T) {
	k := newKey(t, 1)
	a, b := signPersonT(t, k, basePerson(t)), signPersonT(t, k, basePerson(t))
	if a != b {
		t.Errorf("two signatures of the same claims differ:\n%s\n%s", a, b)
	}
	later := basePerson(t)
	later.IssuedAt = later.IssuedAt.Add(time.Second)
	if c := signPersonT(t, k, later); c == a {
		t.Error("a pass issued a second later has the same token")
	}
}

func TestSignPerson_Layout(t *testing.T) {
	k := newKey(t, 1)
	for _, c := range []passtoken.PersonClaims{basePerson(t), {PersonID: id(t, "person", 0xFF), IssuedAt: time.Unix(math.MaxUint32, 0)}} {
		tok := signPersonT(t, k, c)
		if forged := forgePerson(k, rawPerson(t, k, c), nil); forged != tok {
			t.Errorf("SignPerson does not follow the documented layout:\n got %s\nwant %s", tok, forged)
		}
	}
}

// TestSignPerson_Golden pins the format: a change here breaks every personal
// pass already printed, and needs a new PersonPrefix.
func TestSignPerson_Golden(t *testing.T) {
	personKind.checkGolden(t, newKey(t, 7), basePerson(t), "E1:"+goldenPerson)
}

const goldenPerson = "A4DQOBZBEEQSCIJBEEQSCIJBEEQSCIJBNGXIKCAG7FF3PBRVDKQ5LZPCRJLGL2SHNTY7VAZYZVHWPCAFXSOE5FH3EH3ZR66GT7XAGUV6ZMONIXXG6SV24HFY2EUVLLABPLR6BTMFN7PA6"

func TestVerifyPerson_TamperEveryCharacter(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	personKind.checkTamperEveryCharacter(t, keys, signPersonT(t, k, basePerson(t)))
}

func TestVerifyPerson_WrongKey(t *testing.T) {
	personKind.checkWrongKey(t, newKey(t, 1), newKey(t, 2), basePerson(t))
}

func TestVerifyPerson_UnknownKey(t *testing.T) {
	personKind.checkUnknownKey(t, newKey(t, 0xAB), newKey(t, 2), basePerson(t))
}

// TestVerify_KindsKeptApart: a visit pass is not a personal pass nor the
// reverse, however it is dressed up, and each verifier says ErrMalformed
// rather than trying the other's layout.
func TestVerify_KindsKeptApart(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	visit := signT(t, k, baseClaims(t))
	person := signPersonT(t, k, basePerson(t))
	if _, err := passtoken.VerifyPerson(visit, keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("VerifyPerson(visit pass): err = %v, want ErrMalformed", err)
	}
	if _, err := passtoken.Verify(person, keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("Verify(personal pass): err = %v, want ErrMalformed", err)
	}
	// The personal pass's bytes behind the visit prefix: no visit layout
	// has 88 bytes, and the signature covers the prefix anyway.
	if _, err := passtoken.Verify(passtoken.Prefix+person[len(passtoken.PersonPrefix):], keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("Verify(P1: + personal body): err = %v, want ErrMalformed", err)
	}
	// A personal payload signed under the visit prefix, then relabelled:
	// the right length and key, but the signature was not made over "E1:".
	relabelled := forgeAs(k, passtoken.Prefix, passtoken.PersonPrefix, rawPerson(t, k, basePerson(t)), nil)
	if _, err := passtoken.VerifyPerson(relabelled, keys); !errors.Is(err, passtoken.ErrBadSignature) {
		t.Errorf("VerifyPerson(payload signed under P1:): err = %v, want ErrBadSignature", err)
	}
}

func TestSignPerson_RejectsInvalidClaims(t *testing.T) {
	k := newKey(t, 1)
	valid := id(t, "person", 1)
	for name, c := range map[string]passtoken.PersonClaims{
		"visit prefix":        {PersonID: id(t, "visit", 1), IssuedAt: t0},
		"empty ID":            {IssuedAt: t0},
		"upper-case ID":       {PersonID: "person_" + strings.ToUpper(valid[7:]), IssuedAt: t0},
		"first character 8":   {PersonID: "person_8" + valid[8:], IssuedAt: t0},
		"short ID":            {PersonID: valid[:len(valid)-1], IssuedAt: t0},
		"zero issued at":      {PersonID: valid},
		"issued at the epoch": {PersonID: valid, IssuedAt: time.Unix(0, 0)},
		"issued before 1970":  {PersonID: valid, IssuedAt: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
		"issued past 2106":    {PersonID: valid, IssuedAt: time.Unix(math.MaxUint32+1, 0)},
	} {
		if tok, err := passtoken.SignPerson(k, c); !errors.Is(err, passtoken.ErrInvalidClaims) {
			t.Errorf("%s: SignPerson = %q, %v; want ErrInvalidClaims", name, tok, err)
		}
	}
}

func TestSignPerson_RejectsInvalidKey(t *testing.T) {
	k := newKey(t, 1)
	for name, bad := range map[string]passtoken.Key{
		"upper-case ID":     {ID: "ABABABAB", Private: k.Private},
		"short ID":          {ID: k.ID[:7], Private: k.Private},
		"no private key":    {ID: k.ID},
		"short private key": {ID: k.ID, Private: k.Private[:32]},
	} {
		if tok, err := passtoken.SignPerson(bad, basePerson(t)); !errors.Is(err, passtoken.ErrInvalidKey) {
			t.Errorf("%s: SignPerson = %q, %v; want ErrInvalidKey", name, tok, err)
		}
	}
}

func TestVerifyPerson_RejectsNonCanonical(t *testing.T) {
	k := newKey(t, 1)
	keys := keySet(t, k)
	c := basePerson(t)
	tok := signPersonT(t, k, c)
	good := rawPerson(t, k, c)
	zeroIssued := append([]byte{}, good...)
	binary.BigEndian.PutUint32(zeroIssued[20:], 0)
	texts := personKind.malformedTexts(tok)
	for name, s := range map[string]string{
		// 88 bytes leave one unused bit in the last character.
		"trailing bits":        personKind.withTrailingBit(t, tok),
		"a byte after the sig": forgePerson(k, good, []byte{0}),
		"a byte in the body":   forgePerson(k, append(append([]byte{}, good...), 0), nil),
		"payload cut short":    forgePerson(k, good[:23], nil),
		"issued at 0":          forgePerson(k, zeroIssued, nil),
		"visit-length token":   passtoken.PersonPrefix + strings.Repeat("A", passtoken.MaxLen-len(passtoken.Prefix)),
	} {
		texts[name] = s
	}
	personKind.checkMalformed(t, keys, texts)
}

// TestPersonToken_QRSize: a personal pass is smaller than the smallest
// visit pass and stays in the QR alphanumeric set.
func TestPersonToken_QRSize(t *testing.T) {
	k := newKey(t, 1)
	tok := signPersonT(t, k, basePerson(t))
	if i := strings.IndexFunc(tok, func(r rune) bool { return !strings.ContainsRune(qrAlphanumeric, r) }); i >= 0 {
		t.Fatalf("character %q at %d is not QR alphanumeric", tok[i], i)
	}
	worst := passtoken.PersonPrefix + strings.Repeat("A", passtoken.PersonLen-len(passtoken.PersonPrefix))
	v := qrVersion(t, worst)
	t.Logf("personal pass: %d characters, QR version %d-M at worst", len(tok), v)
	if v > 6 {
		t.Errorf("QR version %d at error correction M, want at most 6", v)
	}
}

// TestPersonToken_Zbarimg: a common reader gives back the exact token.
func TestPersonToken_Zbarimg(t *testing.T) {
	tok := signPersonT(t, newKey(t, 1), basePerson(t))
	png, err := qrcode.Encode(tok, qrcode.Medium, 256)
	if err != nil {
		t.Fatalf("qrcode.Encode: %v", err)
	}
	if got := zbartest.Read(t, png); got != tok {
		t.Errorf("zbarimg read\n%q\nwant\n%q", got, tok)
	}
}

func BenchmarkVerifyPerson(b *testing.B) {
	personKind.benchVerify(b, newKey(b, 1), basePerson(b))
}

func BenchmarkSignPerson(b *testing.B) {
	personKind.benchSign(b, newKey(b, 1), basePerson(b))
}
