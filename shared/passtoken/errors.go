package passtoken

import "errors"

var (
	// ErrMalformed is returned by Verify, VerifyPerson and VerifyBadge
	// (a badge's times out of order included) when the text is
	// not a token of their format: a wrong or missing prefix (a personal pass
	// given to Verify, a visit pass to VerifyPerson), a character outside
	// upper-case base32, padding, non-zero trailing bits, a length that does
	// not match the gate count (a personal pass has one length), trailing
	// bytes, or a field out of range (reserved flag bits, daily minutes, a
	// zero issue time, not-before after not-after, duplicate gates).
	ErrMalformed = errors.New("malformed pass token")

	// ErrUnknownKey is returned by Verify, VerifyPerson and VerifyBadge when the token
	// names a key ID the KeySet does not hold (a key never known or retired),
	// or holds with a public key that is not ed25519.PublicKeySize bytes long.
	ErrUnknownKey = errors.New("unknown pass-signing key")

	// ErrBadSignature is returned by Verify, VerifyPerson and VerifyBadge when the
	// signature does not match the prefix and payload under the named key:
	// the token was altered or signed by another key that reuses the ID.
	ErrBadSignature = errors.New("bad pass token signature")

	// ErrInvalidClaims is returned by Sign, SignPerson and SignBadge when the claims
	// cannot be encoded: an ID that is not a TypeID of the right prefix, a
	// time before 1970-01-01 00:00:01 UTC or after 2106-02-07 06:28:15 UTC, a
	// zero IssuedAt, NotBefore after NotAfter, daily minutes outside 0..1439
	// or From equal to Until, more than MaxGates gates, or a gate listed
	// twice.
	ErrInvalidClaims = errors.New("invalid pass claims")

	// ErrInvalidKey is returned by Sign, SignPerson, SignBadge, BadgeKey,
	// BadgeKeyID and NewKeySet when a
	// key's ID is not 8 lower-case hex digits or its key material has the
	// wrong length.
	ErrInvalidKey = errors.New("invalid pass-signing key")
)
