package relay

import "errors"

var (
	// ErrClosed is returned by Relay.Pulse when the relay was closed before
	// or during the pulse. Close has already driven the pin inactive.
	ErrClosed = errors.New("relay closed")

	// ErrPulseLength is returned by Relay.Pulse for a negative length or
	// one above MaxPulse.
	ErrPulseLength = errors.New("pulse length out of range")

	// ErrSelfTest is returned by Relay.SelfTest when the pin reads back
	// another level than the one it was driven to.
	ErrSelfTest = errors.New("the pin does not read back the level driven")

	// ErrNoPin is returned by Open when no GPIO line has the name.
	ErrNoPin = errors.New("no such pin")
)
