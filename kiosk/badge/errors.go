package badge

import "errors"

var (
	// ErrNoToken is returned by Render when the badge has no pass token:
	// a badge without a QR code opens no gate and cannot be scanned out.
	ErrNoToken = errors.New("badge: no pass token")
	// ErrTokenTooLong is returned by Render when the pass token needs a QR
	// code too large for the label at its smallest scannable module size.
	ErrTokenTooLong = errors.New("badge: pass token too long for the label's QR code")
	// ErrUnknownLabel is returned by Render when the badge's label is not
	// one of Labels.
	ErrUnknownLabel = errors.New("badge: unknown label")
)
