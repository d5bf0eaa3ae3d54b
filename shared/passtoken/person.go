package passtoken

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

const (
	// PersonPrefix starts every personal pass token: an employee's own pass,
	// which clocks them in and out at the gates. The digit is the version.
	// A reader tells it from a visit pass ([Prefix]) by these three bytes.
	PersonPrefix = "E1:"

	// PersonLen is the length of every personal pass token: the payload has
	// no optional parts, so anything longer or shorter is ErrMalformed.
	PersonLen = len(PersonPrefix) + (8*(personSize+ed25519.SignatureSize)+4)/5
)

// Layout of the personal payload; doc.go draws it.
const (
	offPerson       = keyIDSize
	offPersonIssued = offPerson + uuidSize
	personSize      = offPersonIssued + 4
	personRawSize   = personSize + ed25519.SignatureSize
	personPrefix    = "person"
)

// PersonClaims is what a personal pass asserts: whose it is and when it was
// issued. The issue time tells the current pass from a replaced one: the
// person's record holds the issue time of their one current pass. It is
// whole Unix seconds: SignPerson drops any fraction, and VerifyPerson returns
// it in UTC.
type PersonClaims struct {
	PersonID string    // TypeID "person_..."
	IssuedAt time.Time // required
}

// SignPerson returns the personal pass token for c signed by k. It returns
// an error wrapping ErrInvalidKey when k is not a usable key and
// ErrInvalidClaims when c cannot be encoded: PersonID is not a person_ TypeID,
// or IssuedAt is zero or outside 1970-01-01 00:00:01 to 2106-02-07 06:28:15
// UTC. The token depends only on k and c, so signing the same claims again
// gives the same token.
func SignPerson(k Key, c PersonClaims) (string, error) {
	keyID, ok := parseKeyID(k.ID)
	if !ok {
		return "", fmt.Errorf("sign personal pass: key ID %q is not %d lower-case hex digits: %w", k.ID, 2*keyIDSize, ErrInvalidKey)
	}
	if len(k.Private) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("sign personal pass: private key has %d bytes, want %d: %w", len(k.Private), ed25519.PrivateKeySize, ErrInvalidKey)
	}
	person, ok := parseTypeID(personPrefix, c.PersonID)
	if !ok {
		return "", fmt.Errorf("sign personal pass: %w: person ID %q is not a %s_ TypeID", ErrInvalidClaims, c.PersonID, personPrefix)
	}
	if c.IssuedAt.IsZero() {
		return "", fmt.Errorf("sign personal pass: %w: issued at is zero", ErrInvalidClaims)
	}
	issued, err := unixSeconds("issued at", c.IssuedAt)
	if err != nil {
		return "", fmt.Errorf("sign personal pass: %w: %w", ErrInvalidClaims, err)
	}

	var buf [len(PersonPrefix) + personRawSize]byte
	n := copy(buf[:], PersonPrefix)
	copy(buf[n:], keyID[:])
	copy(buf[n+offPerson:], person[:])
	binary.BigEndian.PutUint32(buf[n+offPersonIssued:], issued)
	n += personSize
	copy(buf[n:], ed25519.Sign(k.Private, buf[:n]))

	var text [PersonLen]byte
	copy(text[:], PersonPrefix)
	b32.Encode(text[len(PersonPrefix):], buf[len(PersonPrefix):])
	return string(text[:]), nil
}

// VerifyPerson checks a personal pass token against keys and returns its
// claims. Like Verify it returns an error wrapping ErrMalformed,
// ErrUnknownKey or ErrBadSignature, checked in that order, never panics, and
// accepts exactly the text SignPerson writes: another length, a visit pass,
// lower case, padding, non-zero trailing bits or a zero issue time is
// ErrMalformed. Whether the person may pass (active, the pass still current)
// is the caller's to judge.
func VerifyPerson(token string, keys KeySet) (PersonClaims, error) {
	if len(token) != PersonLen || !strings.HasPrefix(token, PersonPrefix) {
		return PersonClaims{}, fmt.Errorf("verify personal pass: no %q prefix or not %d characters: %w", PersonPrefix, PersonLen, ErrMalformed)
	}
	var buf [len(PersonPrefix) + personRawSize]byte
	copy(buf[:], PersonPrefix)
	n, ok := decodeBase32(buf[len(PersonPrefix):], token[len(PersonPrefix):])
	if !ok || n != personRawSize {
		return PersonClaims{}, fmt.Errorf("verify personal pass: not canonical base32 of a payload and signature: %w", ErrMalformed)
	}
	raw := buf[len(PersonPrefix):]
	issued := binary.BigEndian.Uint32(raw[offPersonIssued:])
	if issued == 0 {
		return PersonClaims{}, fmt.Errorf("verify personal pass: %w: issued at is zero", ErrMalformed)
	}

	var id [2 * keyIDSize]byte
	hex.Encode(id[:], raw[:keyIDSize])
	pub, ok := keys[string(id[:])]
	if !ok {
		return PersonClaims{}, fmt.Errorf("verify personal pass: key %s: %w", string(id[:]), ErrUnknownKey)
	}
	if len(pub) != ed25519.PublicKeySize {
		return PersonClaims{}, fmt.Errorf("verify personal pass: key %s has %d bytes: %w", string(id[:]), len(pub), ErrUnknownKey)
	}
	if !ed25519.Verify(pub, buf[:len(PersonPrefix)+personSize], raw[personSize:]) {
		return PersonClaims{}, fmt.Errorf("verify personal pass: key %s: %w", string(id[:]), ErrBadSignature)
	}
	var person [uuidSize]byte
	copy(person[:], raw[offPerson:])
	var tmp [len(personPrefix) + 1 + typeIDSuffixLen]byte
	return PersonClaims{
		PersonID: string(appendTypeID(tmp[:0], personPrefix, &person)),
		IssuedAt: fromUnix(issued),
	}, nil
}
