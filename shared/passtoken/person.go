package passtoken

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
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
	keyID, err := personFormat.signingKey(k)
	if err != nil {
		return "", err
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
	raw := buf[len(PersonPrefix):]
	copy(raw[offPerson:], person[:])
	binary.BigEndian.PutUint32(raw[offPersonIssued:], issued)
	var text [PersonLen]byte
	return personFormat.seal(buf[:], text[:], keyID, personSize, k.Private), nil
}

// VerifyPerson checks a personal pass token against keys and returns its
// claims. Like Verify it returns an error wrapping ErrMalformed,
// ErrUnknownKey or ErrBadSignature, checked in that order, never panics, and
// accepts exactly the text SignPerson writes: another length, a visit pass,
// lower case, padding, non-zero trailing bits or a zero issue time is
// ErrMalformed. Whether the person may pass (active, the pass still current)
// is the caller's to judge.
func VerifyPerson(token string, keys KeySet) (PersonClaims, error) {
	var buf [len(PersonPrefix) + personRawSize]byte
	raw, err := personFormat.decode(buf[:], token)
	if err != nil {
		return PersonClaims{}, err
	}
	issued := binary.BigEndian.Uint32(raw[offPersonIssued:])
	if issued == 0 {
		return PersonClaims{}, fmt.Errorf("verify personal pass: %w: issued at is zero", ErrMalformed)
	}
	if err := personFormat.checkSignature(buf[:], raw, keys); err != nil {
		return PersonClaims{}, err
	}
	var person [uuidSize]byte
	copy(person[:], raw[offPerson:])
	var tmp [len(personPrefix) + 1 + typeIDSuffixLen]byte
	return PersonClaims{
		PersonID: string(appendTypeID(tmp[:0], personPrefix, &person)),
		IssuedAt: fromUnix(issued),
	}, nil
}
