package passtoken_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/passtoken"
)

// FuzzVerify feeds Verify and VerifyPerson arbitrary text. Neither may
// panic, each must fail with one of its sentinels, no text is both kinds of
// token, and whatever one accepts must be exactly the token Sign (or
// SignPerson) makes from the claims it returned: one text form per token.
func FuzzVerify(f *testing.F) {
	k := newKey(f, 1)
	keys := keySet(f, k)
	valid := signT(f, k, baseClaims(f))
	person := signPersonT(f, k, basePerson(f))
	f.Add(valid)
	f.Add(signT(f, k, worstClaims(f)))
	f.Add("")
	f.Add(passtoken.Prefix)
	f.Add("P1:7Q2XK\x00\xff lower case and: other stuff ====")
	f.Add(valid[:len(valid)-1] + "B")
	f.Add(person)
	f.Add(passtoken.PersonPrefix)
	f.Add(person[:len(person)-1] + "B")
	f.Add(passtoken.Prefix + person[len(passtoken.PersonPrefix):])
	f.Add(passtoken.PersonPrefix + valid[len(passtoken.Prefix):])
	f.Fuzz(func(t *testing.T, s string) {
		checkVerify(t, k, keys, s)
	})
}

func checkVerify(t *testing.T, k passtoken.Key, keys passtoken.KeySet, s string) {
	t.Helper()
	checkVerifyPerson(t, k, keys, s)
	c, err := passtoken.Verify(s, keys)
	if err != nil {
		if !isVerifyError(err) {
			t.Fatalf("Verify(%q): error %v wraps none of the sentinels", s, err)
		}
		return
	}
	if _, err := passtoken.VerifyPerson(s, keys); err == nil {
		t.Fatalf("%q verifies both as a visit pass and as a personal pass", s)
	}
	again, err := passtoken.Sign(k, c)
	if err != nil {
		t.Fatalf("Verify accepted %q but Sign refuses its claims: %v", s, err)
	}
	if again != s {
		t.Fatalf("Verify accepted a second form of a token:\n%q\nSign makes\n%q", s, again)
	}
	c2, err := passtoken.Verify(again, keys)
	if err != nil {
		t.Fatalf("re-signed token: %v", err)
	}
	if d := diffClaims(c2, c); d != "" {
		t.Fatalf("re-signed claims differ: %s", d)
	}
}

func checkVerifyPerson(t *testing.T, k passtoken.Key, keys passtoken.KeySet, s string) {
	t.Helper()
	c, err := passtoken.VerifyPerson(s, keys)
	if err != nil {
		if !isVerifyError(err) {
			t.Fatalf("VerifyPerson(%q): error %v wraps none of the sentinels", s, err)
		}
		return
	}
	again, err := passtoken.SignPerson(k, c)
	if err != nil {
		t.Fatalf("VerifyPerson accepted %q but SignPerson refuses its claims: %v", s, err)
	}
	if again != s {
		t.Fatalf("VerifyPerson accepted a second form of a token:\n%q\nSignPerson makes\n%q", s, again)
	}
}

// FuzzVerifyPersonSigned signs arbitrary personal payloads with the test key
// the way the format does, to reach the checks past the signature. A correct
// signature over 24 bytes can only fail as ErrMalformed (a zero issue time).
func FuzzVerifyPersonSigned(f *testing.F) {
	k := newKey(f, 1)
	keys := keySet(f, k)
	f.Add(rawPerson(f, k, basePerson(f)), []byte(nil))
	f.Add([]byte{}, []byte{1})
	f.Add(make([]byte, 24), []byte(nil))
	keyID := mustHex(f, k.ID)
	f.Fuzz(func(t *testing.T, payload, extra []byte) {
		if len(payload) > 64 || len(extra) > 8 {
			return
		}
		payload = append([]byte{}, payload...)
		copy(payload, keyID)
		tok := forgePerson(k, payload, extra)
		_, err := passtoken.VerifyPerson(tok, keys)
		if len(payload) == 24 && len(extra) == 0 && err != nil && !errors.Is(err, passtoken.ErrMalformed) {
			t.Fatalf("correctly signed payload %x: err = %v, want ErrMalformed or success", payload, err)
		}
		if (len(payload) != 24 || len(extra) != 0) && err == nil {
			t.Fatalf("payload of %d bytes and %d after the signature verified", len(payload), len(extra))
		}
		checkVerify(t, k, keys, tok)
	})
}

// FuzzVerifySigned reaches the payload checks past the signature, which
// random text never does: it signs arbitrary payload bytes with the test key
// the way the format does. A payload Verify accepts must come back from Sign
// byte for byte; anything else must be ErrMalformed.
func FuzzVerifySigned(f *testing.F) {
	k := newKey(f, 1)
	keys := keySet(f, k)
	for _, c := range []passtoken.Claims{baseClaims(f), worstClaims(f), {VisitID: id(f, "visit", 1), SiteID: id(f, "site", 2), IssuedAt: t0}} {
		f.Add(rawOf(f, k, c).bytes(), []byte(nil))
	}
	f.Add([]byte{}, []byte{1})
	keyID := rawOf(f, k, baseClaims(f)).keyID
	f.Fuzz(func(t *testing.T, payload, extra []byte) {
		if len(payload) > 200 || len(extra) > 8 {
			return
		}
		// Name the test key, or nearly every input stops at the key lookup.
		payload = append([]byte{}, payload...)
		copy(payload, keyID[:])
		tok := forge(k, payload, extra)
		// Without extra bytes Verify splits payload from signature where
		// forge joined them, so the signature holds and only the payload
		// checks can refuse. (Extra bytes may move the split: then any
		// refusal will do.)
		if _, err := passtoken.Verify(tok, keys); err != nil && len(payload) >= 4 && len(extra) == 0 && !errors.Is(err, passtoken.ErrMalformed) {
			t.Fatalf("correctly signed payload %x: err = %v, want ErrMalformed or success", payload, err)
		}
		checkVerify(t, k, keys, tok)
	})
}

// FuzzRoundTrip builds claims from arbitrary values: Sign either refuses
// them with ErrInvalidClaims or Verify gives them back, times cut to seconds.
func FuzzRoundTrip(f *testing.F) {
	k := newKey(f, 1)
	keys := keySet(f, k)
	f.Add([]byte("0123456789abcdef0123456789abcdef"), int64(t0.Unix()), int64(t1.Unix()), int64(t0.Unix()), uint32(0), 480, 1080, true, uint8(2))
	f.Add([]byte{}, int64(0), int64(0), int64(1), uint32(999), -1, -1, false, uint8(0))
	f.Add([]byte{0xFF}, int64(math.MaxUint32), int64(-5), int64(math.MaxUint32+1), uint32(1e9-1), 1439, 0, false, uint8(5))
	f.Fuzz(func(t *testing.T, uuids []byte, nbf, naf, iat int64, nanos uint32, from, until int, single bool, nGates uint8) {
		u := func(i int) []byte {
			b := make([]byte, 16)
			for j := range b {
				if len(uuids) > 0 {
					b[j] = uuids[(i*16+j)%len(uuids)] ^ byte(i)
				}
			}
			return b
		}
		at := func(s int64) time.Time {
			if s == 0 {
				return time.Time{}
			}
			return time.Unix(s, int64(nanos%1e9))
		}
		c := passtoken.Claims{
			VisitID: idFromUUID(t, "visit", u(0)), SiteID: idFromUUID(t, "site", u(1)),
			NotBefore: at(nbf), NotAfter: at(naf), IssuedAt: at(iat), SingleUse: single,
		}
		if from >= 0 || until >= 0 {
			c.Daily = &passtoken.Daily{From: from, Until: until}
		}
		for i := range int(nGates % (passtoken.MaxGates + 2)) {
			c.GateIDs = append(c.GateIDs, idFromUUID(t, "gate", u(2+i)))
		}
		tok, err := passtoken.Sign(k, c)
		if err != nil {
			if !errors.Is(err, passtoken.ErrInvalidClaims) {
				t.Fatalf("Sign: %v, want ErrInvalidClaims", err)
			}
			if valid := claimsEncodable(c); valid {
				t.Fatalf("Sign refused encodable claims %+v: %v", c, err)
			}
			return
		}
		if !claimsEncodable(c) {
			t.Fatalf("Sign accepted claims that break the format's rules: %+v", c)
		}
		got, err := passtoken.Verify(tok, keys)
		if err != nil {
			t.Fatalf("Verify(Sign(%+v)): %v", c, err)
		}
		want := c
		for _, p := range []*time.Time{&want.NotBefore, &want.NotAfter, &want.IssuedAt} {
			*p = p.Truncate(time.Second)
		}
		if d := diffClaims(got, want); d != "" {
			t.Fatalf("claims differ: %s", d)
		}
	})
}

// claimsEncodable restates the rules of ErrInvalidClaims for claims whose
// IDs are well formed, to check Sign against.
func claimsEncodable(c passtoken.Claims) bool {
	inRange := func(t time.Time) bool {
		return t.IsZero() || (t.Unix() >= 1 && t.Unix() <= math.MaxUint32)
	}
	if c.IssuedAt.IsZero() || !inRange(c.IssuedAt) || !inRange(c.NotBefore) || !inRange(c.NotAfter) {
		return false
	}
	if !c.NotBefore.IsZero() && !c.NotAfter.IsZero() && c.NotBefore.Unix() > c.NotAfter.Unix() {
		return false
	}
	if d := c.Daily; d != nil && (d.From < 0 || d.From > 1439 || d.Until < 0 || d.Until > 1439 || d.From == d.Until) {
		return false
	}
	if len(c.GateIDs) > passtoken.MaxGates {
		return false
	}
	seen := map[string]bool{}
	for _, g := range c.GateIDs {
		if seen[g] {
			return false
		}
		seen[g] = true
	}
	return true
}
