package qrdecode

import "errors"

// ErrNoCode is returned when no attempt finds a QR code whose error
// correction checks out: the frame holds none, or none that can be read.
var ErrNoCode = errors.New("no QR code found")

// ErrFormat is returned (wrapped, with the reason) when the bytes are not a
// PNG or JPEG image, or the image is corrupt or has no pixels.
var ErrFormat = errors.New("not a PNG or JPEG image")

// ErrTooLarge is returned (wrapped, with the size) when a frame is larger
// than MaxBytes, MaxDimension or MaxPixels.
var ErrTooLarge = errors.New("frame too large")
