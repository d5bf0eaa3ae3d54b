package kek

import "errors"

var (
	// ErrInvalidKey is returned by New and Parse when a KEK is unusable.
	ErrInvalidKey = errors.New("kek: invalid key-encryption key")
	// ErrNotSealed is returned by Open for a value that is not sealed.
	ErrNotSealed = errors.New("kek: value is not sealed")
	// ErrUnknownKEK is returned by Open and Reseal for a value sealed under
	// a KEK the ring does not hold.
	ErrUnknownKEK = errors.New("kek: sealed under a key-encryption key not configured")
	// ErrOpen is returned by Open and Reseal for a value that was altered,
	// belongs to another row, or is not in the sealed format.
	ErrOpen = errors.New("kek: sealed value does not open (altered, or moved from another row)")
)
