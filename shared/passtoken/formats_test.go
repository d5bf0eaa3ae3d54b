package passtoken_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/svc-vms/svc/shared/passtoken"
)

// tokenKind is one token format's functions, so that a check all three
// formats must pass is written once.
type tokenKind[C any] struct {
	prefix   string
	sign     func(passtoken.Key, C) (string, error)
	verify   func(string, passtoken.KeySet) (C, error)
	diff     func(got, want C) string
	signName string // for messages: "SignPerson"
	// oneLength is set for a format whose tokens have one length: then a
	// token a character longer or shorter is ErrMalformed, not merely
	// refused.
	oneLength bool
}

var (
	passKind = tokenKind[passtoken.Claims]{prefix: passtoken.Prefix,
		sign: passtoken.Sign, verify: passtoken.Verify, diff: diffClaims, signName: "Sign"}
	personKind = tokenKind[passtoken.PersonClaims]{prefix: passtoken.PersonPrefix,
		sign: passtoken.SignPerson, verify: passtoken.VerifyPerson, diff: diffPerson, signName: "SignPerson", oneLength: true}
	badgeKind = tokenKind[passtoken.BadgeClaims]{prefix: passtoken.BadgePrefix,
		sign: passtoken.SignBadge, verify: passtoken.VerifyBadge, diff: diffBadge, signName: "SignBadge", oneLength: true}
)

func (tk tokenKind[C]) verifyName() string { return "Verify" + strings.TrimPrefix(tk.signName, "Sign") }

func (tk tokenKind[C]) mustSign(tb testing.TB, k passtoken.Key, c C) string {
	tb.Helper()
	tok, err := tk.sign(k, c)
	if err != nil {
		tb.Fatalf("%s: %v", tk.signName, err)
	}
	return tok
}

// checkGolden checks that c signed by k is the token want, and that want
// verifies back to c.
func (tk tokenKind[C]) checkGolden(t *testing.T, k passtoken.Key, c C, want string) {
	t.Helper()
	if got := tk.mustSign(t, k, c); got != want {
		t.Errorf("token for the golden claims changed:\n got %s\nwant %s", got, want)
	}
	got, err := tk.verify(want, keySet(t, k))
	if err != nil {
		t.Fatalf("%s(golden): %v", tk.verifyName(), err)
	}
	if d := tk.diff(got, c); d != "" {
		t.Errorf("golden claims differ: %s", d)
	}
}

// checkTamperEveryCharacter sets each character of tok in turn to every
// other byte, then drops and doubles it: each text must be refused with
// one of the sentinels of verification.
func (tk tokenKind[C]) checkTamperEveryCharacter(t *testing.T, keys passtoken.KeySet, tok string) {
	t.Helper()
	b := []byte(tok)
	for i := range b {
		orig := b[i]
		for v := range 256 {
			if byte(v) == orig {
				continue
			}
			b[i] = byte(v)
			if _, err := tk.verify(string(b), keys); !isVerifyError(err) {
				t.Fatalf("position %d set to %q: err = %v, want a %s error", i, byte(v), err, tk.verifyName())
			}
		}
		b[i] = orig
		for _, s := range []string{tok[:i] + tok[i+1:], tok[:i] + tok[i:i+1] + tok[i:]} {
			_, err := tk.verify(s, keys)
			if tk.oneLength && !errors.Is(err, passtoken.ErrMalformed) {
				t.Fatalf("%q: err = %v, want ErrMalformed", s, err)
			}
			if !isVerifyError(err) {
				t.Fatalf("%q: err = %v, want a %s error", s, err, tk.verifyName())
			}
		}
	}
}

// checkWrongKey: a token signed by another key under k's ID is
// ErrBadSignature under k and verifies under the key that signed it.
func (tk tokenKind[C]) checkWrongKey(t *testing.T, k, other passtoken.Key, c C) {
	t.Helper()
	impostor := passtoken.Key{ID: k.ID, Private: other.Private}
	tok := tk.mustSign(t, impostor, c)
	if _, err := tk.verify(tok, keySet(t, k)); !errors.Is(err, passtoken.ErrBadSignature) {
		t.Fatalf("token signed by another key under the same ID: err = %v, want ErrBadSignature", err)
	}
	if _, err := tk.verify(tok, keySet(t, impostor)); err != nil {
		t.Fatalf("the same token verifies under the key that signed it: %v", err)
	}
}

// checkUnknownKey: a token signed by k is ErrUnknownKey under every key
// set that does not hold k's public key, whole, under its exact ID.
func (tk tokenKind[C]) checkUnknownKey(t *testing.T, k, other passtoken.Key, c C) {
	t.Helper()
	tok := tk.mustSign(t, k, c)
	for name, keys := range map[string]passtoken.KeySet{
		"other key":      keySet(t, other),
		"empty set":      {},
		"nil set":        nil,
		"short key":      {k.ID: k.Public().Key[:31]},
		"upper-case ID":  {strings.ToUpper(k.ID): k.Public().Key},
		"nil public key": {k.ID: nil},
	} {
		if _, err := tk.verify(tok, keys); !errors.Is(err, passtoken.ErrUnknownKey) {
			t.Errorf("%s: err = %v, want ErrUnknownKey", name, err)
		}
	}
}

// checkMalformed runs verify on each text as a subtest: each must be
// ErrMalformed, not just any error, so the format's strictness is what
// refuses it.
func (tk tokenKind[C]) checkMalformed(t *testing.T, keys passtoken.KeySet, texts map[string]string) {
	t.Helper()
	for name, s := range texts {
		t.Run(name, func(t *testing.T) {
			if _, err := tk.verify(s, keys); !errors.Is(err, passtoken.ErrMalformed) {
				t.Fatalf("%s(%q): err = %v, want ErrMalformed", tk.verifyName(), s, err)
			}
		})
	}
}

// malformedTexts returns the good token tok of the kind bent out of its one
// text form in the ways every format refuses, by name.
func (tk tokenKind[C]) malformedTexts(tok string) map[string]string {
	body := tok[len(tk.prefix):]
	return map[string]string{
		"empty":              "",
		"prefix only":        tk.prefix,
		"no prefix":          body,
		"version 2":          tk.prefix[:1] + "2:" + body,
		"lower-case prefix":  strings.ToLower(tk.prefix) + body,
		"lower-case body":    tk.prefix + strings.ToLower(body),
		"padding":            tok + "====",
		"trailing newline":   tok + "\n",
		"leading space":      " " + tok,
		"one character more": tok + "A",
		"one character less": tok[:len(tok)-1],
		"8 characters more":  tok + "AAAAAAAA",
	}
}

// withTrailingBit returns tok, which must have unused bits in its last
// character, with one of them set: the same bytes to encoding/base32, but
// not the one form the package writes.
func (tk tokenKind[C]) withTrailingBit(tb testing.TB, tok string) string {
	tb.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	body := tok[len(tk.prefix):]
	raw, err := stdB32.DecodeString(body)
	if err != nil {
		tb.Fatal(err)
	}
	if len(raw)*8%5 == 0 {
		tb.Fatalf("test needs a length with unused bits, got %d bytes", len(raw))
	}
	last := strings.IndexByte(alphabet, body[len(body)-1])
	if last&1 != 0 {
		tb.Fatalf("the last character %q already has its unused bit set", body[len(body)-1])
	}
	bent := tok[:len(tok)-1] + string(alphabet[last|1])
	if raw2, err := stdB32.DecodeString(bent[len(tk.prefix):]); err != nil || !bytes.Equal(raw2, raw) {
		tb.Fatalf("trailing-bit variant should decode to the same bytes with encoding/base32: %v", err)
	}
	return bent
}

// forgeAs signs signedPrefix‖payload with k the way doc.go describes and
// writes it under prefix, with extra after the signature: the two prefixes
// differ to relabel a token of one kind as another.
func forgeAs(k passtoken.Key, signedPrefix, prefix string, payload, extra []byte) string {
	sig := ed25519.Sign(k.Private, append([]byte(signedPrefix), payload...))
	raw := append(append(append([]byte{}, payload...), sig...), extra...)
	return prefix + stdB32.EncodeToString(raw)
}

func (tk tokenKind[C]) benchSign(b *testing.B, k passtoken.Key, c C) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.sign(k, c); err != nil {
			b.Fatal(err)
		}
	}
}

func (tk tokenKind[C]) benchVerify(b *testing.B, k passtoken.Key, c C) {
	keys := keySet(b, k)
	tok := tk.mustSign(b, k, c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.verify(tok, keys); err != nil {
			b.Fatal(err)
		}
	}
}
