package passtoken_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/passtoken"
)

// badgeKey returns a badge key made deterministically from seed.
func badgeKey(tb testing.TB, seed byte) passtoken.Key {
	tb.Helper()
	k, err := passtoken.BadgeKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		tb.Fatalf("BadgeKey: %v", err)
	}
	return k
}

// baseBadge is a badge issued at 08:30 UTC, valid until the end of the
// day in UTC.
func baseBadge(tb testing.TB) passtoken.BadgeClaims {
	tb.Helper()
	return passtoken.BadgeClaims{VisitID: id(tb, "visit", 0x31), SiteID: id(tb, "site", 0x32), IssuedAt: t0,
		NotAfter: time.Date(2026, 3, 9, 23, 59, 59, 0, time.UTC)}
}

func signBadgeT(tb testing.TB, k passtoken.Key, c passtoken.BadgeClaims) string {
	tb.Helper()
	return badgeKind.mustSign(tb, k, c)
}

// rawBadge writes the badge payload doc.go documents, independently of
// the package.
func rawBadge(tb testing.TB, k passtoken.Key, c passtoken.BadgeClaims) []byte {
	tb.Helper()
	b := append([]byte{}, mustHex(tb, k.ID)...)
	v, s := uuidOf(tb, c.VisitID), uuidOf(tb, c.SiteID)
	b = append(append(b, v[:]...), s[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(c.IssuedAt.Unix()))
	return binary.BigEndian.AppendUint32(b, uint32(c.NotAfter.Unix()))
}

// forgeBadge signs prefix‖payload with k and writes it under the badge
// prefix, with extra after the signature.
func forgeBadge(k passtoken.Key, signedPrefix string, payload, extra []byte) string {
	return forgeAs(k, signedPrefix, passtoken.BadgePrefix, payload, extra)
}

func diffBadge(got, want passtoken.BadgeClaims) string {
	var d []string
	if got.VisitID != want.VisitID {
		d = append(d, "VisitID "+got.VisitID+" want "+want.VisitID)
	}
	if got.SiteID != want.SiteID {
		d = append(d, "SiteID "+got.SiteID+" want "+want.SiteID)
	}
	if !got.IssuedAt.Equal(want.IssuedAt) || got.IssuedAt.Location() != time.UTC {
		d = append(d, "IssuedAt "+got.IssuedAt.String()+" want "+want.IssuedAt.String())
	}
	if !got.NotAfter.Equal(want.NotAfter) || got.NotAfter.Location() != time.UTC {
		d = append(d, "NotAfter "+got.NotAfter.String()+" want "+want.NotAfter.String())
	}
	return strings.Join(d, "; ")
}

func TestBadgeKeyID_IsSHA256OfPublicKey(t *testing.T) {
	k := badgeKey(t, 3)
	pub := k.Public().Key
	sum := sha256.Sum256(pub)
	if want := hex.EncodeToString(sum[:4]); k.ID != want {
		t.Errorf("badge key ID = %q, want %q", k.ID, want)
	}
	if id, err := passtoken.BadgeKeyID(pub); err != nil || id != k.ID {
		t.Errorf("BadgeKeyID = %q, %v; want %q", id, err, k.ID)
	}
	if _, err := passtoken.BadgeKeyID(pub[:31]); !errors.Is(err, passtoken.ErrInvalidKey) {
		t.Errorf("BadgeKeyID(31 bytes): err = %v, want ErrInvalidKey", err)
	}
	if _, err := passtoken.BadgeKey(k.Private[:32]); !errors.Is(err, passtoken.ErrInvalidKey) {
		t.Errorf("BadgeKey(32 bytes): err = %v, want ErrInvalidKey", err)
	}
}

func TestSignVerifyBadge_RoundTrip(t *testing.T) {
	k := badgeKey(t, 1)
	keys := keySet(t, k)
	frac := baseBadge(t)
	frac.IssuedAt = frac.IssuedAt.Add(999 * time.Millisecond).In(time.FixedZone("CET", 3600))
	fracWant := baseBadge(t)
	sameSecond := baseBadge(t)
	sameSecond.NotAfter = sameSecond.IssuedAt
	longest := baseBadge(t)
	longest.NotAfter = longest.IssuedAt.Add(passtoken.MaxBadgeValidity)
	for name, tt := range map[string]struct{ in, want passtoken.BadgeClaims }{
		"plain":                      {baseBadge(t), baseBadge(t)},
		"fraction dropped, UTC back": {frac, fracWant},
		"issued in its last second":  {sameSecond, sameSecond},
		"longest":                    {longest, longest},
		"latest": {passtoken.BadgeClaims{VisitID: id(t, "visit", 0xFF), SiteID: id(t, "site", 0), IssuedAt: time.Unix(math.MaxUint32-10, 0),
			NotAfter: time.Unix(math.MaxUint32, 0)}, passtoken.BadgeClaims{VisitID: id(t, "visit", 0xFF), SiteID: id(t, "site", 0),
			IssuedAt: time.Unix(math.MaxUint32-10, 0), NotAfter: time.Unix(math.MaxUint32, 0)}},
	} {
		t.Run(name, func(t *testing.T) {
			tok := signBadgeT(t, k, tt.in)
			if len(tok) != passtoken.BadgeLen {
				t.Errorf("token has %d characters, BadgeLen is %d", len(tok), passtoken.BadgeLen)
			}
			got, err := passtoken.VerifyBadge(tok, keys)
			if err != nil {
				t.Fatalf("VerifyBadge(%q): %v", tok, err)
			}
			if d := diffBadge(got, tt.want); d != "" {
				t.Errorf("claims differ: %s", d)
			}
			if again := signBadgeT(t, k, got); again != tok {
				t.Errorf("re-signing the verified claims gave another token")
			}
		})
	}
	for range 200 {
		c := baseBadge(t)
		c.VisitID, c.SiteID = randomID(t, "visit"), randomID(t, "site")
		got, err := passtoken.VerifyBadge(signBadgeT(t, k, c), keys)
		if err != nil {
			t.Fatalf("VerifyBadge: %v", err)
		}
		if d := diffBadge(got, c); d != "" {
			t.Fatalf("claims differ: %s", d)
		}
	}
}

func TestSignBadge_Layout(t *testing.T) {
	k := badgeKey(t, 1)
	c := baseBadge(t)
	if forged, tok := forgeBadge(k, passtoken.BadgePrefix, rawBadge(t, k, c), nil), signBadgeT(t, k, c); forged != tok {
		t.Errorf("SignBadge does not follow the documented layout:\n got %s\nwant %s", tok, forged)
	}
}

// TestSignBadge_Golden pins the format: a change here breaks every badge
// already printed, and needs a new BadgePrefix.
func TestSignBadge_Golden(t *testing.T) {
	k := badgeKey(t, 7)
	if k.ID != "fe812c12" {
		t.Fatalf("badge key ID = %q: BadgeKeyID changed", k.ID)
	}
	badgeKind.checkGolden(t, k, baseBadge(t), "B1:"+goldenBadge)
}

const goldenBadge = "72ASYERRGEYTCMJRGEYTCMJRGEYTCMJRGIZDEMRSGIZDEMRSGIZDEMRSGJU25BIINGXV572DSPYEVC7XWFV3473SQDPQRR3AOQAKNL3GRXQMYOIY5UDDMU5KJF6MW6MBTCROZL4IMXSYVPUETIIK7RO4XMPL5SENCMC3L4NXNYRAE"

func TestVerifyBadge_TamperEveryCharacter(t *testing.T) {
	k := badgeKey(t, 1)
	keys := keySet(t, k)
	badgeKind.checkTamperEveryCharacter(t, keys, signBadgeT(t, k, baseBadge(t)))
}

func TestVerifyBadge_WrongAndUnknownKey(t *testing.T) {
	badgeKind.checkWrongKey(t, badgeKey(t, 1), badgeKey(t, 2), baseBadge(t))
	badgeKind.checkUnknownKey(t, badgeKey(t, 1), badgeKey(t, 2), baseBadge(t))
}

// TestVerifyBadge_RejectsNonCanonical: a badge has one text form and one
// length.
func TestVerifyBadge_RejectsNonCanonical(t *testing.T) {
	k := badgeKey(t, 1)
	tok := signBadgeT(t, k, baseBadge(t))
	texts := badgeKind.malformedTexts(tok)
	// 108 bytes leave one unused bit in the last character.
	texts["trailing bits"] = badgeKind.withTrailingBit(t, tok)
	texts["a byte in the body"] = forgeBadge(k, passtoken.BadgePrefix, append(rawBadge(t, k, baseBadge(t)), 0), nil)
	texts["visit-length token"] = passtoken.BadgePrefix + strings.Repeat("A", passtoken.MaxLen-len(passtoken.Prefix))
	badgeKind.checkMalformed(t, keySet(t, k), texts)
}

// TestVerifyBadge_KindsKeptApart: a badge key signs no visit or personal
// pass that their verifiers accept under the badge prefix, and a badge is
// no other kind of token.
func TestVerifyBadge_KindsKeptApart(t *testing.T) {
	k := badgeKey(t, 1)
	keys := keySet(t, k)
	badge := signBadgeT(t, k, baseBadge(t))
	if _, err := passtoken.Verify(badge, keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("Verify(badge): err = %v, want ErrMalformed", err)
	}
	if _, err := passtoken.VerifyPerson(badge, keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("VerifyPerson(badge): err = %v, want ErrMalformed", err)
	}
	visit := signT(t, k, baseClaims(t))
	person := signPersonT(t, k, basePerson(t))
	for name, tok := range map[string]string{"visit pass": visit, "personal pass": person,
		"visit pass relabelled":    passtoken.BadgePrefix + visit[len(passtoken.Prefix):],
		"personal pass relabelled": passtoken.BadgePrefix + person[len(passtoken.PersonPrefix):]} {
		if _, err := passtoken.VerifyBadge(tok, keys); !errors.Is(err, passtoken.ErrMalformed) {
			t.Errorf("VerifyBadge(%s): err = %v, want ErrMalformed", name, err)
		}
	}
	// A badge payload signed under the visit prefix, then relabelled: the
	// right length and key, but the signature was not made over "B1:".
	if _, err := passtoken.VerifyBadge(forgeBadge(k, passtoken.Prefix, rawBadge(t, k, baseBadge(t)), nil), keys); !errors.Is(err, passtoken.ErrBadSignature) {
		t.Errorf("VerifyBadge(payload signed under P1:): err = %v, want ErrBadSignature", err)
	}
}

// TestVerifyBadge_RejectsBadTimes: a correctly signed payload whose times
// are out of order or too far apart is malformed, so a verifier never
// meets a badge valid for longer than MaxBadgeValidity.
func TestVerifyBadge_RejectsBadTimes(t *testing.T) {
	k := badgeKey(t, 1)
	keys := keySet(t, k)
	for name, change := range map[string]func(*passtoken.BadgeClaims){
		"zero issued at":        func(c *passtoken.BadgeClaims) { c.IssuedAt = time.Unix(0, 0) },
		"not after before":      func(c *passtoken.BadgeClaims) { c.NotAfter = c.IssuedAt.Add(-time.Second) },
		"valid for too long":    func(c *passtoken.BadgeClaims) { c.NotAfter = c.IssuedAt.Add(passtoken.MaxBadgeValidity + time.Second) },
		"zero not after":        func(c *passtoken.BadgeClaims) { c.NotAfter = time.Unix(0, 0) },
		"a year from its issue": func(c *passtoken.BadgeClaims) { c.NotAfter = c.IssuedAt.AddDate(1, 0, 0) },
	} {
		c := baseBadge(t)
		change(&c)
		if _, err := passtoken.VerifyBadge(forgeBadge(k, passtoken.BadgePrefix, rawBadge(t, k, c), nil), keys); !errors.Is(err, passtoken.ErrMalformed) {
			t.Errorf("%s: VerifyBadge err = %v, want ErrMalformed", name, err)
		}
		if c.IssuedAt.Unix() == 0 || c.NotAfter.Unix() == 0 {
			c.IssuedAt, c.NotAfter = time.Time{}, time.Time{}
		}
		if tok, err := passtoken.SignBadge(k, c); !errors.Is(err, passtoken.ErrInvalidClaims) {
			t.Errorf("%s: SignBadge = %q, %v; want ErrInvalidClaims", name, tok, err)
		}
	}
	// A byte after the signature.
	if _, err := passtoken.VerifyBadge(forgeBadge(k, passtoken.BadgePrefix, rawBadge(t, k, baseBadge(t)), []byte{0}), keys); !errors.Is(err, passtoken.ErrMalformed) {
		t.Errorf("trailing byte: err = %v, want ErrMalformed", err)
	}
}

func TestSignBadge_RejectsInvalid(t *testing.T) {
	k := badgeKey(t, 1)
	for name, change := range map[string]func(*passtoken.BadgeClaims){
		"visit ID with site prefix": func(c *passtoken.BadgeClaims) { c.VisitID = id(t, "site", 1) },
		"site ID with visit prefix": func(c *passtoken.BadgeClaims) { c.SiteID = id(t, "visit", 1) },
		"empty visit":               func(c *passtoken.BadgeClaims) { c.VisitID = "" },
		"issued before 1970":        func(c *passtoken.BadgeClaims) { c.IssuedAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) },
		"not after past 2106":       func(c *passtoken.BadgeClaims) { c.NotAfter = time.Unix(math.MaxUint32+1, 0) },
	} {
		c := baseBadge(t)
		change(&c)
		if tok, err := passtoken.SignBadge(k, c); !errors.Is(err, passtoken.ErrInvalidClaims) {
			t.Errorf("%s: SignBadge = %q, %v; want ErrInvalidClaims", name, tok, err)
		}
	}
	for name, bad := range map[string]passtoken.Key{
		"upper-case ID":     {ID: strings.ToUpper(k.ID), Private: k.Private},
		"no private key":    {ID: k.ID},
		"short private key": {ID: k.ID, Private: k.Private[:32]},
	} {
		if tok, err := passtoken.SignBadge(bad, baseBadge(t)); !errors.Is(err, passtoken.ErrInvalidKey) {
			t.Errorf("%s: SignBadge = %q, %v; want ErrInvalidKey", name, tok, err)
		}
	}
}

// TestBadge_QRSize: a badge fits a QR code of version 10 or lower at
// error correction M, in the alphanumeric mode, whatever its IDs.
func TestBadge_QRSize(t *testing.T) {
	k := badgeKey(t, 1)
	tok := signBadgeT(t, k, baseBadge(t))
	if i := strings.IndexFunc(tok, func(r rune) bool { return !strings.ContainsRune(qrAlphanumeric, r) }); i >= 0 {
		t.Fatalf("character %q at %d is not QR alphanumeric", tok[i], i)
	}
	worst := passtoken.BadgePrefix + strings.Repeat("A", len(tok)-len(passtoken.BadgePrefix))
	v := qrVersion(t, worst)
	t.Logf("a badge is %d characters: QR version %d-M at worst", len(tok), v)
	if v > 10 {
		t.Errorf("QR version %d at error correction M, want at most 10", v)
	}
	for range 50 {
		c := baseBadge(t)
		c.VisitID, c.SiteID = randomID(t, "visit"), randomID(t, "site")
		if tok := signBadgeT(t, k, c); qrVersion(t, tok) > v {
			t.Fatalf("QR version %d for %s, more than letters only", qrVersion(t, tok), tok)
		}
	}
}

func FuzzVerifyBadge(f *testing.F) {
	k := badgeKey(f, 1)
	keys := keySet(f, k)
	f.Add(signBadgeT(f, k, baseBadge(f)))
	f.Add(passtoken.BadgePrefix)
	f.Add("B1:AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := passtoken.VerifyBadge(s, keys)
		if err != nil {
			if !isVerifyError(err) {
				t.Fatalf("VerifyBadge(%q): unexpected error %v", s, err)
			}
			return
		}
		// Whatever verifies is what SignBadge writes for its claims.
		if again := signBadgeT(t, k, c); again != s {
			t.Fatalf("VerifyBadge accepted %q, which SignBadge writes as %q", s, again)
		}
	})
}

func BenchmarkSignBadge(b *testing.B) {
	badgeKind.benchSign(b, badgeKey(b, 1), baseBadge(b))
}

// BenchmarkVerifyBadge is the gate's cost for a walk-in's scan.
func BenchmarkVerifyBadge(b *testing.B) {
	badgeKind.benchVerify(b, badgeKey(b, 1), baseBadge(b))
}
